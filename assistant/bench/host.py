"""The machine a benchmark ran on, recorded beside its figures."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from datetime import UTC, datetime

from ..cpus import usable_cpus


@dataclass(frozen=True)
class Machine:
    """Cores, memory and load at the start: other work on a shared machine skews timings."""

    cpus: int
    ram_gib: float | None
    platform: str
    python: str
    load_average: tuple[float, float, float] | None  # at the start: other work on the machine skews timings
    date: str

    def describe(self) -> str:
        ram = f"{self.ram_gib:.1f} GiB RAM" if self.ram_gib is not None else "RAM unknown"
        load = f", load average {self.load_average[0]:.2f} at the start" if self.load_average else ""
        return f"{self.cpus} CPU cores, {ram}, {self.platform}, Python {self.python}{load}"


def machine() -> Machine:
    try:
        ram: float | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        ram = None
    try:
        load: tuple[float, float, float] | None = os.getloadavg()
    except (OSError, AttributeError):
        load = None
    return Machine(
        cpus=usable_cpus(),
        ram_gib=ram,
        platform=f"{platform.system()} {platform.machine()}",
        python=platform.python_version(),
        load_average=load,
        date=datetime.now(UTC).date().isoformat(),
    )
