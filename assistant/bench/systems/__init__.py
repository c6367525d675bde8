"""The systems `assistant bench locomo` compares. A new baseline is one module with a `System` subclass
and one line in `SYSTEMS`."""

from __future__ import annotations

from .base import Answerer, Context, Environment, FormationCost, System
from .full import FullContextSystem
from .prostream import ProStreamArchiveSystem, ProStreamSystem
from .rag import RagSystem
from .rag_budget import RagBudgetSystem
from .recent import RecentSystem
from .recent_window import RecentWindowSystem

SYSTEMS: dict[str, type[System]] = {
    cls.name: cls
    for cls in (
        ProStreamSystem,
        RagSystem,
        FullContextSystem,
        RecentWindowSystem,
        RecentSystem,
        RagBudgetSystem,
        ProStreamArchiveSystem,
    )
}
# What `bench locomo` runs unless told: `rag-budget` and `prostream-archive` differ from `rag` and
# `prostream` only once a stream outgrows the memory's budget, which a LoCoMo conversation alone
# never does (`bench longterm` runs them).
LOCOMO_SYSTEMS: tuple[str, ...] = tuple(
    name for name in SYSTEMS if name not in (RagBudgetSystem.name, ProStreamArchiveSystem.name)
)
# What `bench longterm` runs unless told: the bounded memory, the same with the archive to fall
# back on (its own figures), and `rag` unbounded and at the memory's budget.
LONGTERM_SYSTEMS: tuple[str, ...] = (
    ProStreamSystem.name,
    ProStreamArchiveSystem.name,
    RagSystem.name,
    RagBudgetSystem.name,
)

__all__ = [
    "LOCOMO_SYSTEMS",
    "LONGTERM_SYSTEMS",
    "SYSTEMS",
    "Answerer",
    "Context",
    "Environment",
    "FormationCost",
    "System",
]
