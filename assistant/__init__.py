"""An on-device voice memory assistant: a bounded hierarchical memory of what was said."""

from .config import Settings, load_settings
from .errors import AssistantError, ConfigError, InputError, ModelError, StoreError
from .memory.api import Memory
from .records import Answer, Evidence, Utterance

__all__ = [
    "Answer",
    "AssistantError",
    "ConfigError",
    "Evidence",
    "InputError",
    "Memory",
    "ModelError",
    "Settings",
    "StoreError",
    "Utterance",
    "load_settings",
]
__version__ = "0.1.0"
