"""The systems `assistant bench locomo` compares. A new baseline is one module with a `System` subclass
and one line in `SYSTEMS`."""

from __future__ import annotations

from .base import Answerer, Context, Environment, FormationCost, System
from .full import FullContextSystem
from .prostream import ProStreamSystem
from .rag import RagSystem
from .recent import RecentSystem
from .recent_window import RecentWindowSystem

SYSTEMS: dict[str, type[System]] = {
    cls.name: cls for cls in (ProStreamSystem, RagSystem, FullContextSystem, RecentWindowSystem, RecentSystem)
}

__all__ = ["SYSTEMS", "Answerer", "Context", "Environment", "FormationCost", "System"]
