"""The served LLM's API key: read from a file or the environment, never from the configuration.

A config file is often shared, copied into bug reports or kept in a dotfiles repository; a key
in it would leak with it. `llm.api_key_file` names a file that holds only the key (it can be
0600), `llm.api_key_env` a variable the service manager sets.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..config import LLMOptions
from ..errors import ConfigError


def read_api_key(options: LLMOptions) -> str | None:
    """The key to send as a bearer token; None when neither llm.api_key_file nor llm.api_key_env is set."""
    if options.api_key_file is not None:
        path = Path(options.api_key_file).expanduser()
        try:
            key = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise ConfigError(f"llm.api_key_file names {path}, which does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"llm.api_key_file names {path}, which cannot be read: {exc}") from None
        if not key:
            raise ConfigError(f"llm.api_key_file names {path}, which is empty; write the server's API key there")
        return key
    if options.api_key_env is not None:
        key = os.environ.get(options.api_key_env, "").strip()
        if not key:
            raise ConfigError(
                f"llm.api_key_env names the environment variable {options.api_key_env}, which is not set "
                "(or empty) in this process"
            )
        return key
    return None
