"""One root exception for everything the assistant reports to a user.

The CLI turns these into a clean message and exit code; library callers can catch
`AssistantError` alone. Each subclass names a part of the system so the message can
say where things went wrong.
"""

from __future__ import annotations


class AssistantError(Exception):
    """Base class: a problem the user can act on, with a message that says what and where."""

    exit_code = 1


class ConfigError(AssistantError):
    """A configuration file is malformed or holds an unknown key, wrong type or impossible value."""

    exit_code = 2


class ModelError(AssistantError):
    """A model is missing, corrupt, or cannot be loaded."""

    exit_code = 3


class InputError(AssistantError):
    """Input data (a conversation file, an utterance, a question) is unusable."""

    exit_code = 4


class StoreError(AssistantError):
    """The database cannot be opened, migrated or written."""

    exit_code = 5


class LLMUnreachable(ModelError):
    """The language model's server (`llm.backend: openai`) cannot be reached, or stopped answering."""
