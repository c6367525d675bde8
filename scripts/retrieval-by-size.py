"""Retrieval at several stream lengths, side by side in one process (BENCHMARKS.md, "Scale").

Each argument is DIR:UTTERANCES, a memory kept by `assistant bench scale --sizes UTTERANCES
--work-dir DIR` (seed 0). The 50 probe questions of each memory are asked in turn, one of each
memory after another, so that a change in the machine's load falls on every length alike; the
last of three passes is timed. Run from the repository root:
`.venv/bin/python scripts/retrieval-by-size.py d1:1000 d2:100000`.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from assistant.bench.scale import reopen_kept

PROBES = 50
WARM_UP = 2


def main(args: list[str]) -> None:
    runs = []
    for arg in args:
        where, n = arg.rsplit(":", 1)
        memory, stream = reopen_kept(Path(where), int(n))
        runs.append((int(n), memory, stream.probes(PROBES, recent=1000), []))
    # Each question is asked WARM_UP + 1 times and timed the last: the first passes load the
    # models and warm their caches and the database's pages, which in `bench scale` a thousand
    # steps of streaming have done (one pass alone left a fresh process about 10 ms a question
    # slower than the run).
    for turn in range(WARM_UP + 1):
        for i in range(PROBES):
            for _, memory, probes, ms in runs:
                t0 = time.perf_counter()
                memory.prepare(probes[i].question, use=False, now=memory.store.clock)
                if turn == WARM_UP:
                    ms.append((time.perf_counter() - t0) * 1000)
    base = statistics.median(runs[0][3])
    for n, memory, _, ms in runs:
        median = statistics.median(ms)
        print(f"{n:>7,} utterances: retrieval median {median:.1f} ms, {median / base:.2f}x")
        memory.close()


if __name__ == "__main__":
    main(sys.argv[1:])
