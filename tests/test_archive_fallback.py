"""Falling back to the archive: where the bounded memory holds nothing relevant, or nothing as
relevant as an archived line by `memory.answer.archive_margin`, recall may read every archived line
(`memory.answer.archive_fallback`), says so, and never reaches a line that was forgotten or has
expired."""

from __future__ import annotations

from datetime import UTC

from assistant.cli import print_answer
from assistant.mcp_server.views import AnswerView
from assistant.records import FROM_ARCHIVE, Answer, Evidence, ForgetFilter

from .conftest import check_invariants, open_memory

T0 = 1_700_000_000.0  # 14 November 2023
KEY = "Before I forget, the spare key for the shed is under the blue flowerpot by the back door."
QUESTION = "Where is the spare key for the shed?"


# Other talk, each topic said with a new figure: varied enough that the memory keeps some of each.
_OTHER_TALK = (
    "The {n} bus was late again this morning.",
    "I made a curry with {n} chillies last night.",
    "The match ended {n} to one after extra time.",
    "My sister ran {n} kilometres on Sunday.",
    "The printer jammed {n} times during the meeting.",
    "We watched {n} episodes of the baking show.",
    "The tomatoes in the greenhouse grew {n} centimetres this week.",
    "The train to Galway costs {n} euros now.",
)


def _a_week_of_other_talk(fallback: bool, tmp_path, *, margin: float = 0.2, later: str = "", **memory):
    """A memory whose budget let the line about the key go under a few days of other talk (and
    then `later` was said, which it holds)."""
    answer = {"archive_fallback": fallback, "archive_margin": margin}
    mem = open_memory(tmp_path / "data", budget=200, answer=answer, **memory)
    mem.add("Ana", KEY, T0)
    for i in range(64):
        mem.add("Sam" if i % 2 else "Ana", _OTHER_TALK[i % len(_OTHER_TALK)].format(n=i + 2), T0 + 3600 * (i + 1))
    if later:
        mem.add("Sam", later, T0 + 3600 * 70)
    mem.flush()
    key_id = next(u.id for u in mem.store.utterances(range(1, 100)) if u.text == KEY)
    assert mem.store.held_ids_among([key_id]) == []  # the memory let it go; the archive keeps it
    return mem, key_id


def test_off_recall_reads_only_what_the_memory_keeps(tmp_path):
    mem, key_id = _a_week_of_other_talk(False, tmp_path)
    try:
        found = mem.search(QUESTION)
        assert not found.from_archive and key_id not in [r.evidence.utterance_id for r in found.lines]
        assert mem.prepare(QUESTION, use=False).prompt is None  # declined: nothing relevant is held
    finally:
        mem.close()


def test_on_a_line_the_memory_let_go_is_found_in_the_archive_and_labelled(tmp_path):
    mem, key_id = _a_week_of_other_talk(True, tmp_path)
    try:
        found = mem.search(QUESTION)
        assert found.from_archive
        assert found.lines[0].evidence.utterance_id == key_id and found.lines[0].found_by == ("archive",)
        prepared = mem.prepare(QUESTION, use=False)
        assert prepared.prompt is not None and prepared.retrieval.from_archive
        assert key_id in [e.utterance_id for e in prepared.prompt.sources]
        # A question the memory does hold something on never reaches the archive.
        assert not mem.search("How much is the train to Galway?").from_archive
        check_invariants(mem)
    finally:
        mem.close()


# Held after the key was let go: it shares the question's words, far less than the key's line does.
SHED_ROOF = "The shed roof needs new felt before the winter."


def test_an_archived_line_far_nearer_than_anything_held_is_read_there(tmp_path):
    mem, key_id = _a_week_of_other_talk(True, tmp_path, later=SHED_ROOF)
    try:
        held = mem.store.held_ids_among(u.id for u in mem.store.utterances(range(1, 100)) if u.text == SHED_ROOF)
        assert held  # the memory holds something on the shed
        found = mem.search(QUESTION)
        assert found.from_archive and found.lines[0].evidence.utterance_id == key_id
    finally:
        mem.close()


def test_a_held_line_near_enough_keeps_the_question_in_the_memory(tmp_path):
    # The same memory, with a margin no archived line can clear: the shed roof is what it reads.
    mem, key_id = _a_week_of_other_talk(True, tmp_path, margin=1.0, later=SHED_ROOF)
    try:
        found = mem.search(QUESTION)
        assert not found.from_archive and key_id not in [r.evidence.utterance_id for r in found.lines]
        assert any(r.evidence.text == SHED_ROOF for r in found.lines)
    finally:
        mem.close()


def test_a_forgotten_line_is_out_of_the_archive_fallback_too(tmp_path):
    mem, key_id = _a_week_of_other_talk(True, tmp_path)
    try:
        mem.forget(ForgetFilter(text="flowerpot"))
        found = mem.search(QUESTION)
        assert key_id not in [r.evidence.utterance_id for r in found.lines]
        assert all("flowerpot" not in r.evidence.text for r in found.lines)
    finally:
        mem.close()


def test_an_expired_line_is_out_of_the_archive_fallback_too(tmp_path):
    mem, key_id = _a_week_of_other_talk(True, tmp_path, retention_days=30)
    try:
        assert mem.expire() > 0  # the whole stream is years old
        found = mem.search(QUESTION)
        assert key_id not in [r.evidence.utterance_id for r in found.lines]
    finally:
        mem.close()


def test_every_client_says_an_answer_comes_from_the_archive(capsys):
    cited = Evidence(7, "Ana", T0, KEY)
    print_answer(Answer("Under the blue flowerpot.", (cited,), True, from_archive=True), zone=UTC)
    assert FROM_ARCHIVE in capsys.readouterr().out
    print_answer(Answer("Under the blue flowerpot.", (cited,), True), zone=UTC)
    assert FROM_ARCHIVE not in capsys.readouterr().out
    assert AnswerView.of(Answer("Under the blue flowerpot.", (cited,), True, from_archive=True), UTC).from_archive
