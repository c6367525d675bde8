"""A day's digest: what its conversations were about, and the commitments made in them.

Built on demand from what is stored when it is asked for, so it costs nothing while nobody
asks, and a correction or a forget shows at the next call:

* topics are the memory tree's events that rest on lines of that day, under their scenes,
  each citing those lines (an event merged across days cites only the day's); an event the LLM
  wrote is shown only while it keeps who did what in those lines, else the line it rests on
  most is quoted (`topics.py`);
* commitments come from every stored line of the day (`commitments.py`: the grammar picks what
  someone will do, in the words said, then the LLM weeds out what only reads like it).

It is built in three steps so that a daemon can keep the LLM off its writer thread, as it does
for answers: `read_day` and `assemble` read the store; `confirm` in between only asks the LLM.
`assemble` reads the day again and keeps a commitment only while every line it cites is still
stored with the words it had, so a line forgotten while the LLM was busy never appears.
"""

from __future__ import annotations

import time as _time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from ..errors import InputError
from ..records import Commitment, Digest, DigestItem, Evidence, Utterance
from ..store.store import Store
from .commitments import Candidate, Judge, Verdict, candidates, deadline
from .deadlines import due_date
from .topics import checked


@dataclass(frozen=True)
class Day:
    """A calendar day in a zone, as the epoch seconds of its local midnights: [since, until)."""

    day: date
    zone: tzinfo
    since: float
    until: float

    @property
    def iso(self) -> str:
        return self.day.isoformat()


def zone_name(zone: tzinfo) -> str:
    """The zone's IANA name when it has one ("Europe/Lisbon"), else what it calls itself."""
    return str(getattr(zone, "key", None) or zone)


def day_of(day: str | None, zone: tzinfo, now: float | None = None) -> Day:
    """The day named by an ISO date (2026-11-16), or None for today, in `zone`.

    Midnight to midnight in local time, so a day across a DST change lasts 23 or 25 hours.
    """
    if day is None:
        when = datetime.fromtimestamp(_time.time() if now is None else now, zone).date()
    else:
        try:
            when = date.fromisoformat(day.strip())
        except (ValueError, AttributeError):
            raise InputError(f"{day!r:.40} is not a day; give it as YYYY-MM-DD (2026-11-16)") from None

    def midnight(d: date) -> float:
        return datetime(d.year, d.month, d.day, tzinfo=zone).timestamp()

    try:
        return Day(when, zone, midnight(when), midnight(when + timedelta(days=1)))
    except (OverflowError, ValueError):  # the first or last day a datetime holds, in some zone
        raise InputError(f"{day!r:.40} is outside the days that can be told apart") from None


@dataclass(frozen=True)
class DayReading:
    """What the LLM is to judge for a day: read from the store, on the daemon's writer."""

    day: Day
    candidates: tuple[Candidate, ...]


def _lines_of(store: Store, day: Day) -> list[Utterance]:
    return store.utterances(store.utterance_ids_between(day.since, day.until, None))


def read_day(store: Store, day: Day) -> DayReading:
    """The day's candidate commitments: every stored line of it through the grammar, with the
    times they name read in the day's zone."""
    return DayReading(day, tuple(candidates(_lines_of(store, day), day.zone)))


def confirm(reading: DayReading, judge: Judge) -> tuple[Verdict, ...]:
    """The judge's verdict on each candidate (the LLM's part; it reads no table)."""
    if not reading.candidates:
        return ()
    return tuple(judge(reading.candidates))


def assemble(store: Store, reading: DayReading, verdicts: Sequence[Verdict]) -> Digest:
    """The digest of `reading`'s day from what the store holds now, with the commitments the
    verdicts confirmed whose lines are all still stored, unchanged."""
    day = reading.day
    lines = _lines_of(store, day)
    stored = {u.id: u for u in lines}
    commitments = []
    for c, verdict in zip(reading.candidates, verdicts, strict=True):
        if not verdict.commitment:
            continue
        said = [u for u in (c.utterance, c.request) if u is not None]
        now = [stored.get(u.id) for u in said]
        if any(n is None or n.text != u.text for n, u in zip(now, said, strict=True)):
            continue  # forgotten, or its words changed, since it was judged
        current = [n for n in now if n is not None]
        due = deadline(c)
        commitments.append(
            Commitment(
                who=current[0].speaker,
                what=verdict.what,
                due=due,
                due_date=due_date(due, current[0].time, day.zone),
                evidence=tuple(Evidence.of(u) for u in current),
            )
        )
    counts = Counter(u.speaker for u in lines)
    return Digest(
        day=day.iso,
        zone=zone_name(day.zone),
        since=day.since,
        until=day.until,
        utterances=len(lines),
        speakers=tuple(name for name, _ in counts.most_common()),
        topics=_topics(store, day),
        commitments=tuple(commitments),
        unfiled=store.unfiled_between(day.since, day.until),
    )


def _topics(store: Store, day: Day) -> tuple[DigestItem, ...]:
    sources = store.event_sources_between(day.since, day.until)
    events = {n.id: n for n in store.nodes_by_id(sources)}
    scenes = {n.id: n.text for n in store.nodes_by_id({e.parent_id for e in events.values() if e.parent_id})}
    return tuple(
        DigestItem(
            text=checked(events[nid].text, lines),
            scene=scenes.get(events[nid].parent_id or 0, ""),
            evidence=tuple(lines),
            node_id=nid,
        )
        for nid, lines in sources.items()
        if nid in events
    )
