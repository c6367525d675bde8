"""An on-device voice memory assistant: a bounded hierarchical memory of what was said."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import Settings, load_settings
from .errors import AssistantError, ConfigError, InputError, ModelError, StoreError
from .records import Answer, Evidence, Utterance

if TYPE_CHECKING:
    from .memory.api import Memory

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


def __getattr__(name: str) -> Any:
    """`Memory` is imported on first use: the engine loads usearch and onnxruntime, which the
    terminal UI and the daemon's clients never need."""
    if name == "Memory":
        from .memory.api import Memory

        return Memory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
