"""The "since / until / speaker" filter on utterances, as SQL conditions.

Recall's filter, the lines of one speaker, a reassignment's range, an export's selection and a
forget all narrow utterances the same way; building their conditions in one place keeps the
bounds meaning the same everywhere: `since` inclusive, `until` exclusive.
"""

from __future__ import annotations

from typing import NamedTuple

from ..records import RecallFilter


class Conditions(NamedTuple):
    """SQL to append to a WHERE clause, each condition led by " AND ", with its parameters.

    Appended rather than standalone so a query can put its own first term before them
    (`WHERE memory_lines MATCH ?{sql}`, or `WHERE 1{sql}` when it has none).
    """

    sql: str
    params: tuple[object, ...]


NO_CONDITIONS = Conditions("", ())


def utterance_window(
    since: float | None = None,
    until: float | None = None,
    *,
    speaker_id: int | None = None,
    speaker_name: str | None = None,
    speaker_name_or_id: str | None = None,
) -> Conditions:
    """Conditions on utterances `u` said in [since, until), by one speaker if one is given.

    The speaker is given one of three ways, each as its callers have always matched it:
    `speaker_id`, the speaker's row; `speaker_name`, a name in any letter case (recall's filter);
    `speaker_name_or_id`, the exact name or the id written as text (an export's selection).
    The two by name need the utterance's speaker joined as `s`.
    """
    if sum(s is not None for s in (speaker_id, speaker_name, speaker_name_or_id)) > 1:
        raise ValueError("utterance_window: give the speaker one way, not several")
    sql: list[str] = []
    params: list[object] = []
    if since is not None:
        sql.append(" AND u.time >= ?")
        params.append(since)
    if until is not None:
        sql.append(" AND u.time < ?")
        params.append(until)
    if speaker_id is not None:
        sql.append(" AND u.speaker_id = ?")
        params.append(speaker_id)
    if speaker_name is not None:
        sql.append(" AND s.name = ? COLLATE NOCASE")
        params.append(speaker_name)
    if speaker_name_or_id is not None:
        sql.append(" AND (s.name = ? OR CAST(s.id AS TEXT) = ?)")
        params += [speaker_name_or_id, speaker_name_or_id]
    return Conditions("".join(sql), tuple(params))


def recall_window(window: RecallFilter | None) -> Conditions:
    """The conditions of a recall filter (none without one)."""
    if window is None:
        return NO_CONDITIONS
    return utterance_window(window.since, window.until, speaker_name=window.speaker)
