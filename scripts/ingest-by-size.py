"""Ingest at several stream lengths, side by side in one process (BENCHMARKS.md, "Scale").

Each argument is DIR:UTTERANCES, a memory kept by `assistant bench scale --sizes UTTERANCES
--work-dir DIR` (seed 0). Each memory is copied to a scratch folder (the kept one is not
touched) and the stream goes on from where it stopped: the next utterances are added to each
memory in turn, one to each before the next, so that a change in the machine's load falls on
every length alike. Run from the repository root:
`.venv/bin/python scripts/ingest-by-size.py d1:10000 d2:100000 --steps 600`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from assistant.bench.scale import reopen_kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("memories", nargs="+", metavar="DIR:UTTERANCES")
    parser.add_argument("--steps", type=int, default=600, help="utterances added to each memory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assistant-ingest-") as scratch:
        runs = []
        for i, arg in enumerate(args.memories):
            where, n = arg.rsplit(":", 1)
            copy = Path(scratch) / str(i)
            shutil.copytree(where, copy)
            memory, stream = reopen_kept(copy, int(n))
            runs.append((int(n), memory, list(stream.take(args.steps)), []))
        for step in range(args.steps):
            for _, memory, upcoming, ms in runs:
                u = upcoming[step]
                t0 = time.perf_counter()
                memory.add(u.speaker, u.text, u.time)
                ms.append((time.perf_counter() - t0) * 1000)
        base = statistics.mean(runs[0][3])
        for n, memory, _, ms in runs:
            mean = statistics.mean(ms)
            p95 = sorted(ms)[int(0.95 * len(ms))]
            print(
                f"{n:>7,} utterances: ingest median {statistics.median(ms):.1f} ms, mean {mean:.1f} ms "
                f"({mean / base:.2f}x), p95 {p95:.1f} ms"
            )
            memory.close()


if __name__ == "__main__":
    main()
