"""The answer's context and the answer frame, with the real tokenizer of the answering LLM."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from assistant.llm import load_tokenizer
from assistant.memory.answer import (
    DONT_KNOW,
    build_prompt,
    cited_evidence,
    frame,
    says_unknown,
    strip_citations,
)
from assistant.memory.context import Candidate, adds_words, build_context, render
from assistant.models import resolve
from assistant.records import Evidence, Utterance

from .conftest import open_memory

LISBON = ZoneInfo("Europe/Lisbon")
# Monday 14 August 2023, 23:30 in Lisbon (22:30 UTC): the local date and the UTC date agree here;
# 23:30 UTC would be the 15th in Lisbon.
MONDAY = datetime(2023, 8, 14, 22, 30, tzinfo=UTC).timestamp()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    mem = open_memory(tmp_path_factory.mktemp("tok"))
    source = str(resolve(mem.settings, "llm").path)
    mem.close()
    return load_tokenizer(source)


def _ev(uid: int, speaker: str, text: str, t: float) -> Evidence:
    return Evidence(uid, speaker, t, text)


def test_lines_are_shown_by_day_in_time_order_with_their_dates_resolved():
    late = datetime(2023, 8, 14, 23, 30, tzinfo=UTC).timestamp()  # 00:30 on the 15th in Lisbon
    lines = [
        Candidate(_ev(2, "Ana", "I went to the support group yesterday.", late)),
        Candidate(_ev(1, "Sam", "How was your weekend?", MONDAY)),
    ]
    text = render(lines, LISBON)
    assert text == (
        "Monday 14 August 2023:\n"
        "Sam: How was your weekend?\n"
        "\n"
        "Tuesday 15 August 2023:\n"
        "Ana: I went to the support group yesterday (Monday 14 August 2023)."
    )
    # No clock times, unit counts or numbered citations for a small model to copy.
    assert not re.search(r"\d\d:\d\d|amu|\[\d+\]", text)


def test_the_cap_drops_the_least_relevant_lines_first(tokenizer):
    best = _ev(1, "Ana", "The Lisbon trip moves to May.", MONDAY)
    filler = [_ev(10 + i, "Sam", f"Unrelated remark number {i} about the weather.", MONDAY + 60 * i) for i in range(40)]
    context = build_context([Candidate(best), *(Candidate(e) for e in filler)], tokenizer, 120, LISBON)
    assert context.tokens <= 120 and tokenizer.count(context.text) == context.tokens
    assert best in context.sources  # the best line is never the one cut
    shown = {e.utterance_id for e in context.sources}
    # What fits is a prefix of the ranking: no line is kept while a better one was dropped.
    assert shown == {1} | {10 + i for i in range(len(shown) - 1)}
    assert list(context.sources) == sorted(context.sources, key=lambda e: e.time)


def test_repeated_lines_are_quoted_once_and_long_lines_are_cut_to_what_matches(tokenizer):
    long = _ev(
        3,
        "Tomás",
        "Hey Ingrid! So good to hear from you. The kids are fine. "
        "I signed up for a woodworking class yesterday and loved it. Anyway, how is work going for you these days?",
        MONDAY,
    )
    candidates = [
        Candidate(_ev(1, "Ana", "I love woodworking.", MONDAY)),
        Candidate(_ev(2, "Ana", "I love woodworking!", MONDAY + 5)),
        Candidate(_ev(4, "Sam", "Nice.", MONDAY + 9)),
        Candidate(long),
    ]
    context = build_context(candidates, tokenizer, 300, LISBON, terms=("woodworking", "class"), whole=2, trim_above=20)
    assert [e.utterance_id for e in context.sources] == [1, 3, 4]
    assert "I signed up for a woodworking class yesterday (Sunday 13 August 2023) and loved it." in context.text
    assert "how is work going" not in context.text and "…" in context.text
    # Lines within the first `whole` are never cut.
    whole = build_context([Candidate(long)], tokenizer, 300, LISBON, terms=("woodworking",), whole=1, trim_above=20)
    assert "how is work going" in whole.text


@pytest.fixture(scope="module")
def closeness(tmp_path_factory):
    """Cosines to a question by the memory's own (packaged) sentence embedder."""
    mem = open_memory(tmp_path_factory.mktemp("emb"))
    embedder = mem._embedder
    mem.close()

    def to(question: str):
        return lambda sentences: list(embedder.encode(sentences) @ embedder.encode_one(question))

    return to


def test_a_line_sharing_no_word_keeps_its_sentence_nearest_the_question(tokenizer, closeness):
    question = "What did they eat in Lisbon?"
    best = _ev(1, "Ana", "The Lisbon trip was lovely.", MONDAY)
    meal = _ev(
        2,
        "Sam",
        "Oh nice to hear from you! We had grilled sardines by the river, the best meal of the holiday. "
        "Say hi to everyone at the office for me!",
        MONDAY + 60,
    )
    # A photo's caption is a sentence like the others: kept only when it is what matches.
    photo = _ev(
        3, "Sam", "Here is another one from the trip, on the last day. [shares a photo: a tram on a hill]", MONDAY + 90
    )
    args = dict(terms=("eat", "lisbon"), whole=1, trim_above=20)
    context = build_context(
        [Candidate(best), Candidate(meal), Candidate(photo)],
        tokenizer,
        300,
        LISBON,
        closeness=closeness(question),
        **args,
    )
    assert "Sam: … We had grilled sardines by the river, the best meal of the holiday. …" in context.text
    assert "office" not in context.text and "nice to hear" not in context.text
    assert "tram" not in context.text
    tram = build_context(
        [Candidate(best), Candidate(photo)],
        tokenizer,
        300,
        LISBON,
        closeness=closeness("Which tram did they take?"),
        **args,
    )
    assert "Sam: … [shares a photo: a tram on a hill]" in tram.text
    # Without a way to weigh meaning, such a line is quoted whole, as before.
    whole = build_context([Candidate(best), Candidate(meal)], tokenizer, 300, LISBON, **args)
    assert meal.text in whole.text


def test_only_sentences_that_fit_are_weighed_and_the_nearest_of_them_is_kept(tokenizer):
    weighed: list[list[str]] = []

    def by_length(sentences: list[str]) -> list[float]:
        weighed.append(sentences)
        return [float(len(s)) for s in sentences]  # the longest is the nearest

    best = _ev(1, "Ana", "Short opener here.", MONDAY)
    line = _ev(
        2,
        "Sam",
        "Fine. " + " ".join(["This sentence goes on and on with many words that fill the room"] * 3) + ". Later!",
        MONDAY + 60,
    )
    roomy = build_context(
        [Candidate(best), Candidate(line)],
        tokenizer,
        300,
        LISBON,
        terms=("zzz",),
        whole=1,
        trim_above=20,
        closeness=by_length,
    )
    assert "This sentence goes on" in roomy.text and "Later!" not in roomy.text
    assert weighed[-1] == [s.strip() for s in ("Fine.", line.text[6:-7], "Later!")]
    weighed.clear()
    tight_cap = tokenizer.count(render([Candidate(best)], LISBON)) + 12
    tight = build_context(
        [Candidate(best), Candidate(line)],
        tokenizer,
        tight_cap,
        LISBON,
        terms=("zzz",),
        whole=1,
        trim_above=20,
        closeness=by_length,
    )
    # The long sentence cannot fit, so it is not weighed; the nearest of those that can is quoted.
    assert all("goes on" not in s for batch in weighed for s in batch) and weighed
    assert "Sam: " in tight.text and "goes on" not in tight.text and tight.tokens <= tight_cap


def test_the_memory_cuts_a_line_to_its_sentence_nearest_the_question(tmp_path):
    # Without the score floor: the sardines line shares no word with the question and falls below
    # the Lisbon line's share, so the floor would leave it out (the floor's own tests are in
    # test_recall); this test is about how a line that is shown gets cut.
    mem = open_memory(tmp_path / "data", answer={"whole_lines": 1, "min_score_share": 0.0})
    try:
        mem.add("Ana", "The Lisbon trip was lovely.", MONDAY)
        mem.add(
            "Sam",
            "Oh nice to hear from you! We had grilled sardines by the river, the best meal of the holiday. "
            "Say hi to everyone at the office for me!",
            MONDAY + 60,
        )
        prompt = mem.prepare("What did they eat in Lisbon?", use=False, now=MONDAY + 120).prompt
        assert prompt is not None
        text = prompt.messages[-1]["content"]
        assert "grilled sardines by the river" in text and "office" not in text
    finally:
        mem.close()


def test_a_summary_is_shown_only_when_it_adds_words():
    lines = [_ev(1, "Sam", "I booked the flights to Lisbon.", MONDAY)]
    assert not adds_words("Sam: I booked the flights", lines)
    assert adds_words("Sam plans a family holiday in Portugal", lines)
    text = render([Candidate(lines[0], "Sam plans a family holiday in Portugal")], LISBON)
    assert "(Sam plans a family holiday in Portugal)\nSam: I booked" in text


def test_the_frame_asks_for_a_short_answer_after_the_context():
    messages = frame("14 August 2023:\nSam: The trip moves to May.", "When is the trip?")
    user = messages[-1]["content"]
    assert messages[0]["role"] == "system" and user.index("Sam: The trip") < user.index("Question: When is the trip?")
    assert "as few words as possible" in user and user.endswith("Answer:")
    # The decline is offered once, in the system message: beside the question it outweighed the notes.
    assert "not mentioned" in messages[0]["content"] and "not mentioned" not in user
    # Questions asked of one context share its whole prefix (llama.cpp evaluates it once).
    other = frame("14 August 2023:\nSam: The trip moves to May.", "Who is going?")[-1]["content"]
    prefix = user[: user.index("Question:")]
    assert other.startswith(prefix)
    assert frame("", "Anything?")[-1]["content"].count("(none)") == 1
    # The notes say how to read their dates, to every question alike.
    assert "under the day it was said" in user and "date in parentheses" in user


def test_a_named_day_is_written_out_for_every_question(tmp_path):
    """The context the memory builds: "the fourteenth of May" gets the date it means, whatever
    the question, and the answer is traced through the date the model read."""
    mem = open_memory(tmp_path / "data")
    said = datetime(2026, 11, 16, 9, 2, tzinfo=UTC).timestamp()
    mem.add_many(
        [
            Utterance("Priya", "We fly out on the fourteenth of May and come back on the nineteenth.", said),
            Utterance("Priya", "I am allergic to peanuts, so I always ask them first.", said + 60),
        ]
    )
    written = (
        "We fly out on the fourteenth of May (Friday 14 May 2027) "
        "and come back on the nineteenth (Wednesday 19 May 2027)."
    )
    when = mem.prepare("When do we fly out?", use=False).prompt
    other = mem.prepare("Do you remember who will come back?", use=False).prompt
    mem.close()
    assert when is not None and other is not None
    assert written in when.messages[-1]["content"] and written in other.messages[-1]["content"]
    assert cited_evidence("14 May 2027", when, UTC)[0].text.startswith("We fly out")


def test_not_mentioned_is_read_as_not_knowing_and_cites_nothing(tokenizer):
    unknowing = (DONT_KNOW, "Not mentioned in the notes.", "I don't know")
    assert all(says_unknown(reply) for reply in unknowing)
    assert not says_unknown("7 May 2023")
    assert strip_citations("In May [1][2].") == "In May."
    went = _ev(1, "Ana", "I went to the support group yesterday.", MONDAY)
    prompt = build_prompt("When?", build_context([Candidate(went)], tokenizer, 300, LISBON))
    # The context holds a line an answer can rest on; a reply that does not know rests on none.
    assert cited_evidence("The support group, yesterday.", prompt, LISBON) == (went,)
    for reply in unknowing:
        assert cited_evidence(reply, prompt, LISBON) == (), reply


def test_an_answer_is_traced_to_the_lines_it_rests_on(tokenizer):
    went = _ev(1, "Ana", "I went to the support group yesterday.", MONDAY)
    other = _ev(2, "Sam", "Did everyone see the email?", MONDAY + 60)
    prompt = build_prompt("When?", build_context([Candidate(went), Candidate(other)], tokenizer, 300, LISBON))
    # The date the model read beside "yesterday" leads back to the line.
    assert cited_evidence("13 August 2023", prompt, LISBON) == (went,)
    assert cited_evidence("the support group", prompt, LISBON) == (went,)
    assert cited_evidence("Purple elephants.", prompt, LISBON) == ()
