"""The daily digest: a day's topics and commitments, each citing lines of that day, from what is
stored now.

A scripted conversation over two days is filed into a real memory (extractive distillation);
the commitments' LLM is stood in for by a judge that accepts every candidate, so these tests
check what the digest is built from and what it may cite without loading the model. The LLM's
own part is measured on hand-labelled dialogues (tests/fixtures/commitments.jsonl) in the slow
tests, which also ask a real daemon for the same digest.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml
from click.testing import CliRunner

from assistant.atomic import leftovers
from assistant.bench.synth_speech import silence
from assistant.cli import main
from assistant.config import load_settings
from assistant.daemon.client import DaemonClient, DaemonRefused
from assistant.errors import InputError
from assistant.memory import commitments
from assistant.memory.api import Memory
from assistant.memory.commitments import Candidate, LLMJudge, Verdict, candidates, deadline, grounded
from assistant.memory.deadlines import due_date
from assistant.memory.notes import write_note
from assistant.memory.service import LocalMemory
from assistant.records import Digest, ForgetFilter, Utterance
from assistant.wire import from_json, to_json

from .conftest import overrides
from .daemon_helpers import daemon_config, kill_leftovers, running

FIXTURE = Path(__file__).parent / "fixtures" / "commitments.jsonl"
ZONE = "America/New_York"
NEW_YORK = ZoneInfo(ZONE)
DAY_ONE, DAY_TWO = "2026-11-16", "2026-11-17"


def at(day: str, hhmm: str) -> float:
    """Epoch seconds of a local time in New York."""
    return datetime.fromisoformat(f"{day}T{hhmm}").replace(tzinfo=NEW_YORK).timestamp()


# Two days, each a conversation of its own. The last line of day one is said at 23:30 in New York,
# already the 17th in UTC: it belongs to the 16th, the user's day.
DAYS = [
    (DAY_ONE, "09:00", "Sam", "Morning Priya. Did you see the email about the Lisbon trip?"),
    (DAY_ONE, "09:01", "Priya", "Yes. We fly out on the fourteenth of May and come back on the nineteenth."),
    (DAY_ONE, "09:02", "Sam", "Great. I will send the slides for the client workshop by Thursday."),
    (DAY_ONE, "09:03", "Priya", "Could you also book the big meeting room for the rehearsal?"),
    (DAY_ONE, "09:04", "Sam", "Sure, I'll do it after lunch."),
    (DAY_ONE, "09:05", "Priya", "Finance approved twelve thousand euros for the whole trip."),
    (DAY_ONE, "23:30", "Priya", "I'm going to pack my suitcase for Lisbon tonight."),
    (DAY_TWO, "12:00", "Sam", "The new Italian restaurant near the station is really good."),
    (DAY_TWO, "12:01", "Priya", "I am allergic to peanuts, so I always ask them first."),
    (DAY_TWO, "12:02", "Sam", "Then we will book a table for Friday evening at seven."),
    (DAY_TWO, "12:03", "Priya", "I'll call the restaurant tomorrow to ask about peanuts."),
]


def conversation() -> list[Utterance]:
    return [Utterance(who, text, at(day, hhmm)) for day, hhmm, who, text in DAYS]


class AcceptEverything:
    """A judge that confirms every candidate the detector picked: the digest's plumbing, not the LLM's."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, batch: Sequence[Candidate]) -> list[Verdict]:
        self.calls += 1
        return [Verdict(True, grounded("", c)) for c in batch]


def settings_for(data_dir: Path, llm: str | None = None, threads: int | None = None):
    sections: dict = {"memory": {"distill": {"mode": "extractive"}}, "time_zone": ZONE}
    if llm is not None:
        sections["models"] = {"llm": llm}
    if threads is not None:
        sections["llm"] = {"n_threads": threads}
    return load_settings(user_file=data_dir / "no-user-config.yaml", overrides=overrides(data_dir, **sections))


@pytest.fixture
def two_days(tmp_path):
    mem = Memory(settings_for(tmp_path / "data"))
    mem.add_many(conversation())
    mem.commitment_judge = AcceptEverything()
    yield mem
    mem.close()


def lines_of(digest: Digest) -> list:
    return [e for item in digest.topics for e in item.evidence] + [e for c in digest.commitments for e in c.evidence]


# --- the cheap detector ---------------------------------------------------------------------------


def labelled() -> list[tuple[str, Utterance, dict]]:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(r["dialogue"], Utterance(r["speaker"], r["text"], 1000.0 + 60 * i, i + 1), r) for i, r in enumerate(rows)]


def picked_by_detector() -> dict[int, Candidate]:
    rows = labelled()
    picked: dict[int, Candidate] = {}
    for dialogue in dict.fromkeys(d for d, _, _ in rows):
        for c in candidates([u for d, u, _ in rows if d == dialogue]):
            picked[c.utterance.id or 0] = c
    return picked


def test_the_detector_keeps_every_labelled_commitment_and_drops_what_grammar_rules_out():
    rows, picked = labelled(), picked_by_detector()
    commitments_said = [u.id for _, u, r in rows if r["commitment"]]
    missed = [u.text for _, u, r in rows if r["commitment"] and u.id not in picked]
    assert not missed, missed
    # Questions, past tense, negations, hypotheticals, wishes, requests and other people's plans
    # carry none of the cues: the LLM never sees them.
    ruled_out = {"question", "past", "negation", "hypothetical", "wish", "request", "other person"}
    let_through = [u.text for _, u, r in rows if r.get("kind") in ruled_out and u.id in picked]
    assert not let_through, let_through
    true = sum(1 for uid in picked if uid in commitments_said)
    precision, recall = true / len(picked), true / len(commitments_said)
    print(f"\ndetector alone: precision {precision:.2f}, recall {recall:.2f}, n={len(rows)}")
    # An acceptance carries the request it answers, and reads its deadline from its own words.
    sure = next(c for c in picked.values() if c.utterance.text == "Sure, I'll do it after lunch.")
    assert sure.request is not None and "meeting room" in sure.request.text
    assert deadline(sure) == "after lunch"
    assert grounded("", sure) == "book the big meeting room for Friday afternoon"


def test_an_action_the_model_made_up_is_replaced_by_the_words_said():
    said = candidates([Utterance("Jo", "I'll drive you to the hospital on Tuesday.", 0.0, 1)])[0]
    assert grounded("drive Jo's mother to the hospital", said) == "drive you to the hospital"
    assert grounded("drive to the hospital", said) == "drive to the hospital"
    assert grounded("drive", said) == "drive you to the hospital"  # a bare verb says too little
    asked = "Would you mind picking up the chairs from the church hall?"
    sure = candidates([Utterance("Eva", asked, 0.0, 1), Utterance("Raj", "Of course, will do.", 1.0, 2)])[0]
    assert grounded("will do", sure) == "pick up the chairs from the church hall"  # the request's action


def test_a_reply_that_is_not_json_or_misnumbers_its_lines_confirms_nothing():
    batch = candidates([Utterance("Sam", "I'll send it.", 0.0, 1), Utterance("Sam", "I will call Ana.", 1.0, 2)])
    assert commitments.read_reply("yes, both", batch) == [Verdict(False), Verdict(False)]
    reply = json.dumps({"lines": [{"line": 7, "kind": "promise", "what": "x"}, {"line": 2, "kind": "promise"}]})
    assert commitments.read_reply(reply, batch) == [Verdict(False), Verdict(True, "call Ana")]


def test_a_deadline_is_the_day_it_names_where_and_when_it_was_said():
    monday = at(DAY_ONE, "10:00")
    assert due_date("by Thursday", monday, NEW_YORK) == "2026-11-19"
    assert due_date("by Monday", monday, NEW_YORK) == "2026-11-23"  # the next Monday, not today
    assert due_date("tomorrow morning", monday, NEW_YORK) == "2026-11-17"
    assert due_date("tonight", at(DAY_ONE, "23:30"), NEW_YORK) == "2026-11-16"
    assert due_date("in two days", monday, NEW_YORK) == "2026-11-18"
    assert due_date("before five", monday, NEW_YORK) == "2026-11-16"
    assert due_date("this weekend", monday, NEW_YORK) is None  # a span, not a day
    assert due_date(None, monday, NEW_YORK) is None


# --- the digest of a day ------------------------------------------------------------------------


def test_a_day_has_only_its_own_topics_and_commitments_each_citing_its_lines_and_speakers(two_days):
    digest = two_days.digest(DAY_ONE)
    since, until = at(DAY_ONE, "00:00"), at(DAY_TWO, "00:00")
    assert (digest.day, digest.zone, digest.since, digest.until) == (DAY_ONE, ZONE, since, until)
    assert digest.utterances == 7 and digest.speakers == ("Priya", "Sam") and digest.unfiled == 0
    assert digest.topics and digest.commitments
    cited = lines_of(digest)
    assert all(since <= e.time < until for e in cited)
    said = {(u.speaker, u.text) for u in conversation() if since <= u.time < until}
    assert all((e.speaker, e.text) in said for e in cited), cited
    assert all(e.speaker in item.speakers for item in digest.topics for e in item.evidence)
    by_line = {c.evidence[0].text: c for c in digest.commitments}
    slides = by_line["Great. I will send the slides for the client workshop by Thursday."]
    assert (slides.who, slides.what, slides.due, slides.due_date) == (
        "Sam",
        "send the slides for the client workshop",
        "by Thursday",
        "2026-11-19",
    )
    room = by_line["Sure, I'll do it after lunch."]
    assert room.who == "Sam" and room.evidence[1].speaker == "Priya"  # the request it accepts, cited too
    packing = by_line["I'm going to pack my suitcase for Lisbon tonight."]
    assert (packing.who, packing.what) == ("Priya", "pack their suitcase for Lisbon")
    assert packing.due_date == DAY_ONE  # 23:30 in New York is still the 16th
    assert all(c.who == c.evidence[0].speaker for c in digest.commitments)
    # The other day has its own lines and nothing of this one.
    other = two_days.digest(DAY_TWO)
    assert other.utterances == 4 and {e.utterance_id for e in lines_of(other)}.isdisjoint(e.utterance_id for e in cited)


def test_today_is_read_in_the_configured_zone_and_a_day_without_speech_is_empty(two_days):
    # 03:00 UTC on the 17th is still the 16th in New York.
    assert two_days.digest(now=at(DAY_ONE, "22:00")).day == DAY_ONE
    empty = two_days.digest("2026-11-20")
    assert (empty.utterances, empty.topics, empty.commitments, empty.speakers) == (0, (), (), ())
    for wrong in ("16/11/2026", "2026-02-30", "tomorrow", "9999-12-31"):
        with pytest.raises(InputError):
            two_days.digest(wrong)


def test_speech_not_filed_yet_is_counted_apart_and_its_commitments_are_read(tmp_path):
    with Memory(settings_for(tmp_path / "data")) as mem:
        mem.add_many(conversation(), flush=False)  # the last lines stay in the sensing buffer
        mem.commitment_judge = AcceptEverything()
        digest = mem.digest(DAY_TWO)
    filed = {e.utterance_id for item in digest.topics for e in item.evidence}
    assert digest.unfiled > 0 and len(filed) == digest.utterances - digest.unfiled
    assert "I'll call the restaurant tomorrow to ask about peanuts." in {c.evidence[0].text for c in digest.commitments}


def test_after_forgetting_a_speaker_none_of_their_lines_appears(two_days):
    before = two_days.digest(DAY_ONE)
    assert any(e.speaker == "Sam" for e in lines_of(before))
    sam_said = {u.text for u in conversation() if u.speaker == "Sam"}
    two_days.forget(ForgetFilter(speaker="Sam"))
    two_days.flush()  # the events that also held Sam's lines are filed again, without them
    after = two_days.digest(DAY_ONE)
    assert after.speakers == ("Priya",) and lines_of(after)
    assert not [e for e in lines_of(after) if e.speaker == "Sam" or e.text in sam_said]
    assert not [i.text for i in after.topics if any(line in i.text for line in sam_said)]
    assert all(c.who == "Priya" for c in after.commitments)


def test_a_line_forgotten_while_the_llm_was_judging_is_left_out(two_days):
    # The daemon reads the day, lets the LLM judge outside its writer, then assembles: a forget
    # can land in between.
    reading = two_days.read_day(DAY_ONE)
    verdicts = two_days.confirm_commitments(reading)
    assert any(c.utterance.speaker == "Sam" for c in reading.candidates)
    two_days.forget(ForgetFilter(speaker="Sam"))
    digest = two_days.finish_digest(reading, verdicts)
    assert digest.commitments and not [e for e in lines_of(digest) if e.speaker == "Sam"]
    # A commitment accepting a request is left out too when the request went: its action quotes it.
    assert not [c for c in digest.commitments if "meeting room" in c.what]


def test_the_llm_is_asked_only_about_lines_that_may_make_a_commitment(two_days):
    judge = two_days.commitment_judge
    two_days.digest("2026-11-20")
    assert judge.calls == 0
    two_days.digest(DAY_ONE)
    assert judge.calls == 1


def test_the_llm_judge_reuses_a_reply_only_for_the_same_lines(monkeypatch):
    asked = []

    class Model:
        def chat(self, messages, *, max_tokens, schema=None):
            asked.append(messages)
            return json.dumps({"lines": [{"line": 1, "kind": "promise", "what": "send the slides"}]})

    judge = LLMJudge("a model", lambda: Model())
    line = Utterance("Sam", "I will send the slides.", 0.0, 1)
    assert judge(candidates([line]))[0] == Verdict(True, "send the slides")
    judge(candidates([line]))
    assert len(asked) == 1
    judge(candidates([Utterance("Priya", line.text, 0.0, 1)]))  # reassigned: another prompt
    assert len(asked) == 2


def test_a_digest_goes_over_the_wire_and_back_whole(two_days):
    digest = two_days.digest(DAY_ONE)
    assert from_json(Digest, json.loads(json.dumps(to_json(digest)))) == digest


# --- notes and the command ----------------------------------------------------------------------


def test_the_markdown_note_has_front_matter_and_replaces_the_day_s_note_whole(two_days, tmp_path):
    digest = two_days.digest(DAY_ONE)
    notes = tmp_path / "notes" / "assistant"
    path = write_note(digest, notes, NEW_YORK)
    assert path == notes / f"{DAY_ONE}.md" and stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert meta == {
        "date": datetime.fromisoformat(DAY_ONE).date(),
        "time_zone": ZONE,
        "speakers": ["Priya", "Sam"],  # most lines first
        "utterances": 7,
        "topics": len(digest.topics),
        "commitments": len(digest.commitments),
    }
    assert "# Monday 16 November 2026" in body and "## Commitments" in body
    assert "- [ ] **Sam** will send the slides for the client workshop, by Thursday (2026-11-19)" in body
    assert "Sam, 09:02: \u201cGreat. I will send the slides" in body  # quoted with its local time
    write_note(two_days.digest(DAY_TWO), notes, NEW_YORK)
    again = write_note(digest, notes, NEW_YORK)
    assert again.read_text(encoding="utf-8") == text and sorted(p.name for p in notes.iterdir()) == [
        f"{DAY_ONE}.md",
        f"{DAY_TWO}.md",
    ]
    assert not leftovers(again)


def test_the_command_prints_the_day_writes_its_note_and_refuses_a_day_that_is_not_one(tmp_path, monkeypatch):
    data = tmp_path / "data"
    with Memory(settings_for(data)) as mem:
        mem.add_many(conversation())
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(overrides(data, memory={"distill": {"mode": "extractive"}}, time_zone=ZONE)))
    # The command's own memory confirms through the LLM: stand in for it.
    monkeypatch.setattr(LLMJudge, "__call__", lambda self, batch: AcceptEverything()(batch))
    runner = CliRunner()
    shown = runner.invoke(main, ["--config", str(config), "digest", DAY_ONE, "--markdown", str(tmp_path / "n")])
    assert shown.exit_code == 0, shown.output
    assert f"{DAY_ONE} ({ZONE}): 7 lines, from Priya, Sam" in shown.output
    assert "Sam will send the slides for the client workshop, by Thursday (2026-11-19)" in shown.output
    assert (tmp_path / "n" / f"{DAY_ONE}.md").exists()
    as_json = runner.invoke(main, ["--config", str(config), "digest", DAY_TWO, "--json"])
    assert as_json.exit_code == 0 and from_json(Digest, json.loads(as_json.output)).utterances == 4
    wrong = runner.invoke(main, ["--config", str(config), "digest", "next tuesday"])
    # Refused by the command itself, before any memory opens, naming the forms it takes.
    assert wrong.exit_code == 4 and "is not a day: give YYYY-MM-DD (2026-11-16), today or yesterday" in wrong.output


# --- the LLM, measured ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "floor"),
    [
        # The product's default: the issue asks for a precision of 0.8 or more.
        (None, 0.8),
        # The tests' quick model, reported for comparison only: it accepts most of what the
        # detector picked (README: it copies prompts rather than reading them).
        ("qwen2.5-coder-0.5b-instruct", None),
    ],
)
def test_commitments_the_llm_confirms_on_labelled_dialogues(tmp_path, model, floor):
    # The dialogues are one day of a real memory, and its digest is what is scored: the detector,
    # the LLM's batches as a day makes them, and the assembly. One thread: llama.cpp's threads
    # wait for each other spinning, and on two cores shared with other tests two threads ran at a
    # tenth of the speed of one (1 token/s against 9, measured here).
    rows = labelled()
    texts = [u.text for _, u, _ in rows]
    assert len(set(texts)) == len(texts), "each line is told apart by its words"
    with Memory(settings_for(tmp_path / "data", llm=model, threads=1)) as mem:
        mem.add_many(Utterance(u.speaker, u.text, at(DAY_ONE, "08:00") + 60 * n) for n, (_, u, _) in enumerate(rows))
        digest = mem.digest(DAY_ONE)
        name = mem.settings.models.llm
    # A commitment matches when it is the same line and the same person.
    found = {(c.evidence[0].text, c.who) for c in digest.commitments}
    gold = {(u.text, r["speaker"]) for _, u, r in rows if r["commitment"]}
    right = found & gold
    precision = len(right) / len(found) if found else 0.0
    recall = len(right) / len(gold)
    print(
        f"\n{name}: precision {precision:.2f} ({len(right)}/{len(found)}), "
        f"recall {recall:.2f} ({len(right)}/{len(gold)}), n={len(rows)} lines"
    )
    for text, who in sorted(found - gold):
        print(f"  not a commitment: {who}: {text}")
    for text, who in sorted(gold - found):
        print(f"  missed: {who}: {text}")
    for c in digest.commitments:
        print(f"  {c.who} will {c.what}" + (f", {c.due} ({c.due_date})" if c.due else ""))
    if floor is not None:
        assert precision >= floor


# --- through the daemon ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_daemon_gives_the_digest_the_local_memory_gives(tmp_path):
    d = daemon_config(tmp_path / "d")
    with open(d.config, "a", encoding="utf-8") as fh:
        # At the top level, after the daemon's section; one LLM thread, as in the measurement above.
        fh.write(f"time_zone: {ZONE}\nllm:\n  n_threads: 1\n")
    settings = load_settings(d.config)
    with LocalMemory(settings) as local:
        local.memory.add_many(conversation())
        expected = {day: local.digest(day) for day in (DAY_ONE, DAY_TWO)}
    assert expected[DAY_ONE].commitments, "the LLM confirmed no commitment: nothing to compare"
    try:
        with running(d, silence(tmp_path / "quiet.wav", 1.0), "the silence to be heard") as daemon:
            with DaemonClient(daemon.socket) as client:
                for day, digest in expected.items():
                    assert client.digest(day) == digest, day
                with pytest.raises(DaemonRefused) as refused:
                    client.digest("2026-02-30")
                assert refused.value.status == 400 and "not a day" in refused.value.message
            with daemon.client() as http:
                assert http.get("/digest", params={"day": "16/11/2026"}).status_code == 422
            shown = CliRunner().invoke(main, ["--config", str(d.config), "digest", DAY_ONE, "--json"])
            assert shown.exit_code == 0, shown.output
            assert from_json(Digest, json.loads(shown.output)) == expected[DAY_ONE]
    finally:
        kill_leftovers()
