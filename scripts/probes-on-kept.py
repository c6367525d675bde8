"""The fact-update probes asked again of memories that `bench scale` kept (BENCHMARKS.md, "Scale").

Each argument is DIR:UTTERANCES[:SEED], a memory kept by `assistant bench scale --sizes
UTTERANCES --seed SEED --work-dir DIR` (seed 0 when left out). Its 50 probes are asked as the run
asked them at that length, by the code checked out now: what a change to recall does to the same
memories, without streaming them again (recall changes nothing a probe measures, since probes
leave no use behind). Prints, per memory, the latest value held, only a stale one, and where each
miss was lost, and how many probes' latest line a held later line supersedes that states another
fact (by the stream's own record of what each line states: a wrong link, which hands the latest
line's place to that line wherever recall finds it); `--misses` prints every miss with its
latest value, the values before it and what supersedes its latest line, and `--config=FILE`
reads them with that config over the defaults. Run from the repository root:
`.venv/bin/python scripts/probes-on-kept.py d10k:10000 d10k-1:10000:1 d100k:100000`.
"""

from __future__ import annotations

import sys

from assistant.bench.scale import check_kept_lines, check_probe, kept_argument, reopen_kept
from assistant.bench.synthetic import SyntheticStream
from assistant.config import load_settings
from assistant.errors import InputError
from assistant.store.store import Store

PROBES = 50


def _successors(store: Store, stream: SyntheticStream, index: int) -> str:
    """What supersedes the line the stream said at `index` (the memory's line `index + 1`): the
    held later lines linked to it: another fact's where any of them states another fact."""
    line = index + 1
    found = store.held_successors([line]).get(line, [])
    if not found:
        return "none"
    fact = stream.fact_stated_by(index)
    return "the same fact's" if all(stream.fact_stated_by(new - 1) == fact for new in found) else "another fact's"


def main(args: list[str]) -> None:
    show = "--misses" in args
    config = next((a.removeprefix("--config=") for a in args if a.startswith("--config=")), None)
    settings = load_settings(config) if config else None
    for arg in (a for a in args if not a.startswith("--")):
        where, n, seed = kept_argument(arg)
        # Opened at the stream's start and streamed here, so that the stream records which fact
        # each line states (`SyntheticStream.fact_stated_by`).
        memory, stream = reopen_kept(where, 0, seed=seed, settings=settings)
        said = [u.text for u in stream.take(n)]
        outcomes: dict[str, int] = {}
        held = stale = 0
        wrongly: dict[bool, int] = {True: 0, False: 0}  # by whether the probe was held
        with memory:
            probes = stream.probes(PROBES, recent=1000)
            for probe in probes:
                check_kept_lines(memory, said, [probe.stated_at + 1], arg)
                prepared = memory.prepare(probe.question, use=False, now=memory.store.clock)
                check = check_probe(memory, probe, prepared)
                held += check.held
                stale += check.stale
                outcomes[check.outcome] = outcomes.get(check.outcome, 0) + 1
                successors = _successors(memory.store, stream, probe.stated_at)
                wrongly[check.held] += successors == "another fact's"
                if show and not check.held:
                    print(
                        f"  {check.outcome}: {probe.question} -> {probe.answer} (stale: {', '.join(probe.stale)};"
                        f" its latest line superseded by: {successors})"
                    )
        tally = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        print(f"{arg}: latest held {held / len(probes):.2f}, stale only {stale / len(probes):.2f} ({tally})")
        print(
            f"  latest line superseded by another fact's: {wrongly[False]} of {len(probes) - held} missed,"
            f" {wrongly[True]} of {held} held"
        )


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except InputError as e:
        raise SystemExit(str(e)) from None
