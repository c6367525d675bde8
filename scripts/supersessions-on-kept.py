"""The supersession links a memory kept by `bench scale` holds, checked against the stream's truth.

Each argument is DIR:UTTERANCES[:SEED], a memory kept by `assistant bench scale --sizes
UTTERANCES --seed SEED --work-dir DIR` (seed 0 when left out). The stream is made again up to
where the memory stopped, and each stored link (old line, new line) is counted as one fact at two
moments (the stream says both lines state the same topic's same slot), two facts (both state
facts, not the same one), or a line that states no fact of the stream's (chatter that carries a
number, "We found 12 bugs in the beta"), with a few of the two-fact links printed. Run from the
repository root: `.venv/bin/python scripts/supersessions-on-kept.py d100k:100000`.
"""

from __future__ import annotations

import sys
from collections import Counter

from assistant.bench.scale import check_kept_lines, kept_argument, reopen_kept
from assistant.errors import InputError

SHOWN = 6


def _how_they_differ(a: tuple[str, str], b: tuple[str, str]) -> str:
    if a[1] == b[1]:
        return "same slot, another topic"
    return "same topic, another slot" if a[0] == b[0] else "both"


def main(args: list[str]) -> None:
    for arg in args:
        where, n, seed = kept_argument(arg)
        # Opened at the stream's start, so that the one pass over the stream below both records
        # which fact each line states and checks the memory's lines against it.
        memory, stream = reopen_kept(where, 0, seed=seed)
        said = [u.text for u in stream.take(n)]
        with memory:
            links = memory.store.supersession_links()
            texts = check_kept_lines(memory, said, (i for link in links for i in link), arg)
        tally: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        shown = 0
        for old, new in links:
            a, b = stream.fact_stated_by(old - 1), stream.fact_stated_by(new - 1)
            if a is None or b is None:
                tally["a line that states no fact"] += 1
            elif a == b:
                tally["one fact"] += 1
            else:
                tally["two facts"] += 1
                kinds[_how_they_differ(a, b)] += 1
                if shown < SHOWN:
                    print(f"  {a}: {texts[old]!r}\n  {b}: {texts[new]!r}")
                    shown += 1
        facts = tally["one fact"] + tally["two facts"]
        print(f"{arg}: {len(links):,} links; " + ", ".join(f"{k} {v:,}" for k, v in tally.items()))
        if facts:
            share = tally["one fact"] / facts
            print(f"  between two lines that state facts, one fact: {share:.2f}; two: {dict(kinds)}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except InputError as e:
        raise SystemExit(str(e)) from None
