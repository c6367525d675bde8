"""The fact-update probes asked again of memories that `bench scale` kept (BENCHMARKS.md, "Scale").

Each argument is DIR:UTTERANCES[:SEED], a memory kept by `assistant bench scale --sizes
UTTERANCES --seed SEED --work-dir DIR` (seed 0 when left out). Its 50 probes are asked as the run
asked them at that length, by the code checked out now: what a change to recall does to the same
memories, without streaming them again (recall changes nothing a probe measures, since probes
leave no use behind). Prints, per memory, the latest value held, only a stale one, and where each
miss was lost; `--misses` prints every miss with its latest value and the values before it, and
`--config=FILE` reads them with that config over the defaults. Run
from the repository root: `.venv/bin/python scripts/probes-on-kept.py d10k:10000 d10k-1:10000:1
d100k:100000`.
"""

from __future__ import annotations

import sys

from assistant.bench.scale import check_probe, kept_argument, reopen_kept
from assistant.config import load_settings

PROBES = 50


def main(args: list[str]) -> None:
    show = "--misses" in args
    config = next((a.removeprefix("--config=") for a in args if a.startswith("--config=")), None)
    settings = load_settings(config) if config else None
    for arg in (a for a in args if not a.startswith("--")):
        where, n, seed = kept_argument(arg)
        memory, stream = reopen_kept(where, n, seed=seed, settings=settings)
        outcomes: dict[str, int] = {}
        held = stale = 0
        with memory:
            probes = stream.probes(PROBES, recent=1000)
            for probe in probes:
                prepared = memory.prepare(probe.question, use=False, now=memory.store.clock)
                check = check_probe(memory, probe, prepared)
                held += check.held
                stale += check.stale
                outcomes[check.outcome] = outcomes.get(check.outcome, 0) + 1
                if show and not check.held:
                    print(f"  {check.outcome}: {probe.question} -> {probe.answer} (stale: {', '.join(probe.stale)})")
        tally = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        print(f"{arg}: latest held {held / len(probes):.2f}, stale only {stale / len(probes):.2f} ({tally})")


if __name__ == "__main__":
    main(sys.argv[1:])
