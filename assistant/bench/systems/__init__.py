"""The systems `assistant bench locomo` compares. A new baseline is one module with a `System` subclass
and one line in `SYSTEMS`."""

from __future__ import annotations

from .base import Answerer, Context, Environment, FormationCost, System
from .full import FullContextSystem
from .prostream import ProStreamSystem
from .rag import RagSystem
from .rag_budget import RagBudgetSystem
from .recent import RecentSystem
from .recent_window import RecentWindowSystem

SYSTEMS: dict[str, type[System]] = {
    cls.name: cls
    for cls in (ProStreamSystem, RagSystem, FullContextSystem, RecentWindowSystem, RecentSystem, RagBudgetSystem)
}
# What `bench locomo` runs unless told: `rag-budget` differs from `rag` only once a stream outgrows the
# memory's budget, which a LoCoMo conversation alone never does (`bench longterm` runs it).
LOCOMO_SYSTEMS: tuple[str, ...] = tuple(name for name in SYSTEMS if name != RagBudgetSystem.name)

__all__ = ["LOCOMO_SYSTEMS", "SYSTEMS", "Answerer", "Context", "Environment", "FormationCost", "System"]
