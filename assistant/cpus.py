"""How many CPUs this process may run on."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity mask, not every CPU the host has.

    Under `taskset`, a container's cpuset or systemd's `CPUAffinity=`, `os.cpu_count()` still
    counts the whole machine, and a model given that many threads on fewer cores only contends.
    """
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1
