"""The daily digest: a day's topics and commitments, each citing lines of that day, from what is
stored now.

A scripted conversation over two days is filed into a real memory (extractive distillation);
the commitments' LLM is stood in for by a judge that accepts every candidate, so these tests
check what the grammar picks, the words and dates it gives, and what the digest may cite,
without loading the model. Three everyday days of home and work talk written for these tests
(tests/fixtures/digest/everyday.json) say which lines commit whom to what and by when, and which
do not (past acts, requests declined, someone else's plan). The LLM's own part is measured in
the slow tests on hand-labelled dialogues (tests/fixtures/commitments.jsonl) and on the everyday
days with LLM-written topics, which must keep who did what; one also asks a real daemon.
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
from assistant.memory.commitments import Candidate, LLMJudge, Verdict, candidates, deadline, grammar
from assistant.memory.deadlines import due_date
from assistant.memory.notes import write_note
from assistant.memory.service import LocalMemory
from assistant.memory.topics import checked, misattributed
from assistant.records import Digest, Evidence, ForgetFilter, Utterance
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
        return [Verdict(True, c.what) for c in batch]


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
    assert sure.what == "book the big meeting room for Friday afternoon"


def test_the_action_is_the_words_said_whatever_the_model_calls_it():
    said = candidates([Utterance("Jo", "I'll drive you to the hospital on Tuesday.", 0.0, 1)])
    assert (said[0].what, said[0].due) == ("drive you to the hospital", "on Tuesday")
    reply = json.dumps({"lines": [{"line": 1, "kind": "promise", "what": "drive Jo's mother to the hospital"}]})
    assert commitments.read_reply(reply, said) == [Verdict(True, "drive you to the hospital")]
    asked = "Would you mind picking up the chairs from the church hall?"
    sure = candidates([Utterance("Eva", asked, 0.0, 1), Utterance("Raj", "Of course, will do.", 1.0, 2)])[0]
    assert sure.what == "pick up the chairs from the church hall"  # the request's action, in plain form
    asked = "Can you pick up milk on your way home?"
    milk = candidates([Utterance("Eva", asked, 0.0, 1), Utterance("Lee", "No problem.", 1.0, 2)])[0]
    assert milk.what == "pick up milk on their way home"  # the one asked tells of their own way


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


# --- everyday days: what was said, and who will do what ------------------------------------------

EVERYDAY = json.loads((Path(__file__).parent / "fixtures" / "digest" / "everyday.json").read_text(encoding="utf-8"))
EVERYDAY_ZONE = ZoneInfo(EVERYDAY["zone"])


def everyday_lines() -> list[dict]:
    return sorted(EVERYDAY["lines"], key=lambda line: (line["day"], line["time"]))


def everyday_utterances() -> list[Utterance]:
    def when(line: dict) -> float:
        return datetime.fromisoformat(f"{line['day']}T{line['time']}").replace(tzinfo=EVERYDAY_ZONE).timestamp()

    return [Utterance(line["speaker"], line["text"], when(line)) for line in everyday_lines()]


def everyday_memory(data_dir: Path, llm: str | None = None, threads: int | None = None) -> Memory:
    sections: dict = {"memory": {"distill": {"mode": "extractive"}}, "time_zone": EVERYDAY["zone"]}
    if llm is not None:
        sections["models"] = {"llm": llm}
    if threads is not None:
        sections["llm"] = {"n_threads": threads}
    mem = Memory(load_settings(user_file=data_dir / "none.yaml", overrides=overrides(data_dir, **sections)))
    mem.add_many(everyday_utterances())
    return mem


def said_plainly(who: str, what: str) -> bool:
    """ "<who> will <what>" reads as English: the verb after "will" is in its plain form (VB), never
    a past tense or participle ("Tom will ordered")."""
    doc = grammar()(f"{who} will {what}.")
    verb = doc[[t.lower_ for t in doc].index("will") + 1]
    return verb.tag_ == "VB"


def check_commitments(found: Sequence, lines: Sequence[dict], *, model_may_drop: bool) -> None:
    """The digest's commitments against the fixture: exactly the expected ones (who, the words, the
    time words and their day), each cited to its line (and to the request a yes answers), each
    grammatical. With a judge that confirms every candidate, the lines only the model can rule out
    ("we'll see") are listed too; the grammar's own exclusions never are."""
    by_text = {line["text"]: line for line in lines}
    listed = {c.evidence[0].text: c for c in found}
    assert len(listed) == len(found), "one commitment a line"
    expected = {t for t, line in by_text.items() if "commitment" in line}
    model_only = {t for t, line in by_text.items() if line.get("grammar") is False}
    ruled_out = {t for t, line in by_text.items() if line.get("grammar") is True}
    assert not set(listed) & ruled_out, sorted(set(listed) & ruled_out)
    if model_may_drop:
        assert set(listed) <= expected | model_only
    else:
        assert set(listed) == expected | model_only, sorted(set(listed) ^ (expected | model_only))
    for text, c in listed.items():
        assert said_plainly(c.who, c.what), f"{c.who} will {c.what}"
        assert c.evidence[0].speaker == by_text[text]["speaker"] == c.who
        if text in expected:
            want = by_text[text]["commitment"]
            assert (c.who, c.what, c.due, c.due_date) == (want["who"], want["what"], want["due"], want["due_date"])
    for c in found:
        if len(c.evidence) > 1:  # a yes cites the request it answers, said just before by someone else
            assert c.evidence[1].speaker != c.who and c.evidence[1].time < c.evidence[0].time


def test_everyday_days_list_exactly_the_commitments_said_each_in_words_and_cited(tmp_path):
    with everyday_memory(tmp_path / "data") as mem:
        mem.commitment_judge = AcceptEverything()
        for day in sorted({line["day"] for line in everyday_lines()}):
            digest = mem.digest(day)
            lines = [line for line in everyday_lines() if line["day"] == day]
            assert digest.utterances == len(lines)
            check_commitments(digest.commitments, lines, model_may_drop=False)
            # The topics quote the day's lines (extractive): each act stays with who said it.
            for topic in digest.topics:
                assert topic_misattributions(topic, lines) == [], topic.text


def test_a_past_act_is_no_commitment_whatever_its_time_words_and_a_plan_needs_its_time_ahead():
    zone = EVERYDAY_ZONE
    nine = datetime(2026, 3, 9, 9, 0, tzinfo=zone).timestamp()

    def picked(text: str) -> list[tuple[str, str | None]]:
        return [(c.what, c.due) for c in candidates([Utterance("Ana", text, nine, 1)], zone)]

    assert picked("I ordered the cushions this morning.") == []
    assert picked("I have booked the table for Friday.") == []
    assert picked("I'm working from home this morning.") == []  # said at nine: not ahead
    assert picked("I'm working from home tomorrow.") == [("work from home", "tomorrow")]
    assert picked("I will order the cushions this afternoon.") == [("order the cushions", "this afternoon")]
    assert picked("If I have time, I'll paint the fence.") == [("paint the fence", None)]  # the act is not in the if
    assert picked("I would paint the fence if I had time.") == []
    assert picked("Sam will paint the fence on Friday.") == []  # someone else's plan


def test_a_topic_that_gives_an_act_to_the_wrong_person_or_makes_one_up_quotes_its_line_instead():
    said = [
        ("Tom", "I invited my parents to dinner on Saturday, by the way."),
        ("Maya", "Then I'm going to bake the lemon cake on Friday."),
        ("Maya", "Tom is driving me to the airport on Friday morning."),
    ]
    lines = [Evidence(utterance_id=n, speaker=who, time=float(n), text=text) for n, (who, text) in enumerate(said)]
    kept = [
        "Tom invited his parents to dinner and Maya will bake a lemon cake",
        "Tom will drive Maya to the airport",
        "Tom and Maya discuss dinner plans with Tom's parents",
        "Maya: Then I'm going to bake the lemon cake on Friday.",  # a quote, as extractive events are
    ]
    for topic in kept:
        assert checked(topic, lines) == topic
    replaced = {
        "Tom and Maya bake a lemon cake for dinner": "Maya: Then I'm going to bake the lemon cake on Friday.",
        "Maya invited Tom's parents to dinner": "Tom: I invited my parents to dinner on Saturday, by the way.",
        "Maya drives to the airport on Friday": "Maya: Tom is driving me to the airport on Friday morning.",
    }
    for topic, quoted in replaced.items():
        assert checked(topic, lines) == quoted
    assert misattributed("Tom sent the invitations for a barbecue", lines) == ["Tom send (nobody spoke of it)"]
    assert misattributed("Tom invites Maya to dinner on Saturday", lines) == ["Tom invite Maya"]  # not whom he asked
    # Written by the 0.5B for the second everyday day: two lines' acts run together, with Mum the
    # one to get compost as spaCy reads it.
    day = [line for line in everyday_lines() if line["day"] == "2026-03-10"]
    cited = [Evidence(utterance_id=n, speaker=x["speaker"], time=float(n), text=x["text"]) for n, x in enumerate(day)]
    quoted = "Tom: Fine, I'll ring Mum tomorrow morning."
    assert checked("Tom rings Mum tomorrow morning to get compost", cited) == quoted
    # Cited without the line that names Mum, it gives an act to someone its lines never name.
    got = misattributed("Tom rings Mum tomorrow morning to get compost", cited[-2:])
    assert got == ["Mum get (not in these lines)"]
    # Also by the 0.5B, on the first day: Maya booked the projector; Leo offered to book the room.
    first = [line for line in everyday_lines() if line["day"] == "2026-03-09"][-2:]
    work = [Evidence(utterance_id=n, speaker=x["speaker"], time=float(n), text=x["text"]) for n, x in enumerate(first)]
    assert misattributed("Maya and Leo booked the projector last week for the client review", work) == [
        "Leo book projector"
    ]


def topic_misattributions(topic, lines: Sequence[dict]) -> list[str]:
    """Acts a topic gives to someone the fixture says did not do them, or does to someone they
    were not done to (the fixture's own labels, not the digest's check): a clause of the topic
    whose verb is an act of the cited lines, whose subject names a person and whose objects name
    people, with no labelled act of that person and verb whose line or label names those people."""
    cited = [line for line in lines if line["text"] in {e.text for e in topic.evidence}]
    acts = [(act[0], act[1], set(act[2]) if len(act) > 2 else set(), line) for line in cited for act in line["acts"]]
    names = {line["speaker"] for line in lines} | {"Ella", "Mum"} | {act[0] for line in lines for act in line["acts"]}
    wrong = []
    for t in grammar()(topic.text):
        if t.pos_ != "VERB" or t.lemma_ not in {verb for _, verb, _, _ in acts}:
            continue
        people = {w.text for s in t.children if s.dep_ == "nsubj" for w in [s, *s.conjuncts] if w.text in names}
        objects = {w.text for w in t.subtree if w.dep_ in ("dobj", "dative", "pobj") and w.text in names} - people
        for who in people:
            if not any(
                doer == who and verb == t.lemma_ and all(o in whom or o in line["text"] for o in objects)
                for doer, verb, whom, line in acts
            ):
                wrong.append(f"{who} {t.lemma_} {' '.join(sorted(objects))}".strip())
    return wrong


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


# Both models are held to the same claims: the grammar decides what may be a commitment and says
# its words, so even a model that accepts most of what it is shown (the 0.5B: README, it copies
# prompts rather than reading them) lists no past act, no question, no refusal and no one else's
# plan, and writes every action in plain form. Floors: the issue asks the default for a precision
# of 0.8; the 0.5B is held to what it measured (7/9 = 0.78 and 7/14 = 0.5 on the labelled
# dialogues: it keeps both "we'll see" lines and turns down half the real ones; the grammar alone
# gives 14/16 = 0.88 and 14/14).
MODELS = [(None, 0.8, 0.8), ("qwen2.5-coder-0.5b-instruct", 0.75, 0.5)]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "precision_floor", "recall_floor"), MODELS)
def test_commitments_the_llm_confirms_on_labelled_dialogues(tmp_path, model, precision_floor, recall_floor):
    # The dialogues are one day of a real memory, and its digest is what is scored: the grammar,
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
    ruled_out = {"question", "past", "negation", "hypothetical", "wish", "request", "other person"}
    listed_wrongly = [u.text for _, u, r in rows if r.get("kind") in ruled_out and (u.text, r["speaker"]) in found]
    assert not listed_wrongly, listed_wrongly
    assert all(said_plainly(c.who, c.what) for c in digest.commitments), [c.what for c in digest.commitments]
    assert precision >= precision_floor and recall >= recall_floor


@pytest.mark.slow
@pytest.mark.parametrize(("model", "precision_floor", "recall_floor"), MODELS)
def test_everyday_days_through_the_llm_keep_what_was_said_and_who_said_it(
    tmp_path, model, precision_floor, recall_floor
):
    # The LLM writes the topics (distill mode llm) and confirms the commitments, as a user's
    # digest does. Every commitment listed is an expected one or one only a model could rule out,
    # in the words said, with its time and cited; no topic gives an act to someone who did not do it.
    sections: dict = {"time_zone": EVERYDAY["zone"], "llm": {"n_threads": 1}, "memory": {"distill": {"mode": "llm"}}}
    if model is not None:
        sections["models"] = {"llm": model}
    data = tmp_path / "data"
    settings = load_settings(user_file=data / "none.yaml", overrides=overrides(data, **sections))
    found, topics = [], []
    with Memory(settings) as mem:
        mem.add_many(everyday_utterances())
        for day in sorted({line["day"] for line in everyday_lines()}):
            digest = mem.digest(day)
            lines = [line for line in everyday_lines() if line["day"] == day]
            check_commitments(digest.commitments, lines, model_may_drop=True)
            found += digest.commitments
            for topic in digest.topics:
                topics.append(topic.text)
                assert topic_misattributions(topic, lines) == [], topic.text
    expected = {line["text"] for line in everyday_lines() if "commitment" in line}
    right = [c for c in found if c.evidence[0].text in expected]
    precision, recall = len(right) / max(len(found), 1), len(right) / len(expected)
    print(f"\neveryday days, {model or 'default'}: precision {precision:.2f}, recall {recall:.2f}")
    for c in found:
        print(f"  {c.who} will {c.what}" + (f", {c.due} ({c.due_date})" if c.due else ""))
    print("topics:", *topics, sep="\n  ")
    assert precision >= precision_floor and recall >= recall_floor


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
