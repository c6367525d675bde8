"""Naming and merging speakers relabels the transcript and the memory built on it, in one transaction."""

from __future__ import annotations

import re

import numpy as np
import pytest

from assistant.errors import InputError
from assistant.memory.speakers import replace_name
from assistant.records import Utterance
from assistant.store.migrations import SCHEMA_VERSION

from .conftest import check_invariants, open_memory, undo_held_lines

T0 = 1_700_000_000.0
LINES = [
    ("Speaker 1", "Speaker 2, did you book the flights to Lisbon for the team offsite?"),
    ("Speaker 2", "Yes, I booked the flights this morning, we leave on the twelfth of May."),
    ("Speaker 1", "Great. Speaker 2 always finds the cheapest fares."),
    ("Speaker 3", "I can look after the hotel, I know a place near the river."),
    ("Speaker 2", "Perfect, and Al from finance approved the budget of four thousand euros."),
    ("Speaker 1", "Then we are set. Let us talk about the quarterly report now."),
    ("Speaker 3", "The report is due on Friday and I still need the sales figures."),
    ("Speaker 2", "I will send you the sales figures tonight."),
]


@pytest.fixture
def mem(tmp_path):
    m = open_memory(tmp_path / "data")
    m.add_many([Utterance(s, t, T0 + 30 * i) for i, (s, t) in enumerate(LINES)], flush=False)
    yield m
    m.close()


def texts(m) -> list[str]:
    return [n.text for n in m.store.nodes()]


def test_new_databases_carry_the_voice_columns(mem):
    assert mem.store.db.scalar("PRAGMA user_version") == SCHEMA_VERSION >= 2
    names = {sp.name: sp for sp in mem.speakers()}
    assert set(names) == {"Speaker 1", "Speaker 2", "Speaker 3"}
    assert names["Speaker 2"].utterances == 3 and names["Speaker 2"].voice is None


def test_rename_relabels_transcript_tree_and_buffers(mem):
    assert any("Speaker 2" in t for t in texts(mem))
    alice = mem.rename_speaker("Speaker 2", "Alice")
    assert alice.name == "Alice" and alice.utterances == 3
    assert not any("Speaker 2" in t for t in texts(mem))
    said = mem.store.speaker_utterances(alice.id)
    assert said[0].text.startswith("Yes, I booked the flights")
    assert all(u.speaker == "Alice" for u in mem.engine.buffer.visible if u.text in {x.text for x in said})
    # Re-hearing an utterance under its new name is a duplicate, not a new line.
    report = mem.add("Alice", LINES[1][1], T0 + 30)
    assert report.duplicates == 1 and not report.archived
    # The utterance vectors embed "speaker: text"; they follow the name.
    vec = mem.store.utterance_vectors([said[0].id])[said[0].id]
    assert float(vec @ mem._embedder.encode_one(f"Alice: {said[0].text}")) > 0.99
    check_invariants(mem)


def test_names_are_replaced_as_whole_names_only():
    assert replace_name("Al met Alice and Al's dog", "Al", "Bob") == "Bob met Alice and Bob's dog"
    assert replace_name("Speaker 1 and Speaker 12", "Speaker 1", "Sam") == "Sam and Speaker 12"
    # The new name is text, never a regex replacement template.
    assert replace_name("Speaker 2 said", "Speaker 2", r"A\1 \g<0>") == r"A\1 \g<0> said"


def test_a_rename_onto_an_existing_name_asks_for_a_merge(mem):
    with pytest.raises(InputError, match="merge the two instead"):
        mem.rename_speaker("Speaker 2", "Speaker 1")
    with pytest.raises(InputError, match=r"no speaker 'Bob' \(known: 1 'Speaker 1'"):
        mem.rename_speaker("Bob", "Robert")
    with pytest.raises(InputError, match="cannot be empty"):
        mem.rename_speaker("Speaker 2", "   ")
    # Nothing changed.
    assert {sp.name for sp in mem.speakers()} == {"Speaker 1", "Speaker 2", "Speaker 3"}


def test_merge_moves_utterances_voices_and_mentions(mem):
    store = mem.store
    ids = {sp.name: sp.id for sp in mem.speakers()}
    a = np.zeros(256, dtype=np.float32)
    a[0] = 1.0
    b = np.zeros(256, dtype=np.float32)
    b[1] = 1.0
    with store.atomic():
        store.set_voice(ids["Speaker 2"], a, 30.0)
        store.set_voice(ids["Speaker 3"], b, 10.0, enrolled=True)
    kept = mem.merge_speakers(str(ids["Speaker 2"]), "Speaker 3")
    assert kept.id == ids["Speaker 2"] and kept.utterances == 5 and kept.enrolled
    assert kept.speech_seconds == pytest.approx(40.0)
    assert kept.voice is not None and np.linalg.norm(kept.voice) == pytest.approx(1.0)
    assert kept.voice[0] > kept.voice[1] > 0  # weighted by the speech behind each
    assert {sp.name for sp in mem.speakers()} == {"Speaker 1", "Speaker 2"}
    assert not any("Speaker 3" in t for t in texts(mem))
    with pytest.raises(InputError, match="with itself"):
        mem.merge_speakers("Speaker 2", "Speaker 2")
    actions = [r[0] for r in store.db.all("SELECT action FROM audit")]
    assert "merge_speakers" in actions
    # The audit keeps ids, never names or words.
    detail = store.db.scalar("SELECT detail FROM audit WHERE action = 'merge_speakers'")
    assert "Speaker" not in detail
    check_invariants(mem)


def test_relabelled_memory_answers_by_the_new_name(mem):
    mem.flush()
    mem.rename_speaker("Speaker 2", "Alice")
    found = mem.search("What did Alice book?")
    quoted = [r.evidence.speaker for r in found.lines] + [u.speaker for u in found.short_term]
    assert "Alice" in quoted and "Speaker 2" not in quoted


def test_speakers_commands(tmp_path):
    from .test_cli import run

    sample = tmp_path / "talk.jsonl"
    sample.write_text(
        "\n".join(f'{{"speaker": "{s}", "text": "{t}", "time": {T0 + 30 * i}}}' for i, (s, t) in enumerate(LINES))
    )
    assert run(["ingest", str(sample)], tmp_path).returncode == 0
    listed = run(["speakers"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"\d+\s+Speaker 2\s+3\s+0m00s\s+-", listed.stdout), listed.stdout
    named = run(["speakers", "name", "Speaker 2", "Alice"], tmp_path)
    assert named.returncode == 0, named.stderr
    assert "is now 'Alice' (3 utterances relabelled)" in named.stdout
    merged = run(["speakers", "merge", "Alice", "Speaker 3"], tmp_path)
    assert merged.returncode == 0 and "5 utterances" in merged.stdout
    bad = run(["speakers", "name", "Nobody", "X"], tmp_path)
    assert bad.returncode == 4 and "no speaker 'Nobody'" in bad.stderr
    after = run(["speakers"], tmp_path).stdout
    assert "Alice" in after and "Speaker 3" not in after


def _voice(axis: int) -> np.ndarray:
    v = np.zeros(256, dtype=np.float32)
    v[axis] = 1.0
    return v


def test_reassign_moves_lines_their_memory_and_voices(mem):
    store = mem.store
    mem.flush()
    ids = {sp.name: sp.id for sp in mem.speakers()}
    said = {u.text: u for sp in mem.speakers() for u in store.speaker_utterances(sp.id)}
    report_line = said[LINES[6][1]]  # Speaker 3 on the report
    hotel_line = said[LINES[3][1]]  # Speaker 3 on the hotel
    with store.atomic():
        # Speaker 3's two lines were heard in two voices; Speaker 1's lines in a third.
        store.set_utterance_voice(hotel_line.id, _voice(0), 4.0)
        store.set_utterance_voice(report_line.id, _voice(1), 4.0)
        for u in store.speaker_utterances(ids["Speaker 1"]):
            store.set_utterance_voice(u.id, _voice(1), 2.0)
    quoting = [n for n in store.nodes() if n.text.startswith("Speaker 3: The report is due")]
    assert quoting
    before_lines = store.db.scalar("SELECT count(*) FROM utterances")

    result = mem.reassign([report_line.id], "Speaker 1")

    assert result.moved == (report_line.id,) and result.removed_speakers == ()
    assert result.speaker.id == ids["Speaker 1"] and result.speaker.utterances == 4
    assert store.utterances([report_line.id])[0].speaker == "Speaker 1"
    assert store.utterances([hotel_line.id])[0].speaker == "Speaker 3"
    assert store.db.scalar("SELECT count(*) FROM utterances") == before_lines  # nothing lost or doubled
    # A node quoting the moved line now names its new speaker; the other line's nodes keep theirs.
    for node in quoting:
        assert store.node(node.id).text.startswith("Speaker 1: The report is due")
    assert "Speaker 3 can look after the hotel" in texts(mem)
    # Voices follow the lines they rest on: Speaker 3 keeps only the hotel line's voice.
    three = store.find_speaker(ids["Speaker 3"])
    assert three.voice is not None and three.voice[0] == pytest.approx(1.0) and three.speech_seconds == 4.0
    one = store.find_speaker(ids["Speaker 1"])
    assert one.voice[1] == pytest.approx(1.0) and one.speech_seconds == pytest.approx(10.0)
    # The moved line embeds under its new name: a search for it by speaker finds it.
    found = mem.search("When is the report due?", speaker="Speaker 1")
    assert LINES[6][1] in [r.evidence.text for r in found.lines] + [u.text for u in found.short_term]
    detail = store.db.scalar("SELECT detail FROM audit WHERE action = 'reassign_utterances'")
    assert "report" not in detail and "Speaker" not in detail
    check_invariants(mem)


def test_reassign_removes_an_unnamed_speaker_left_empty_and_keeps_named_ones(mem):
    store = mem.store
    three = [u.id for u in store.speaker_utterances(store.find_speaker("Speaker 3").id)]
    result = mem.reassign(three, "Speaker 2")
    assert store.find_speaker("Speaker 3") is None and len(result.removed_speakers) == 1
    mem.rename_speaker("Speaker 1", "Sam")
    sams = [u.id for u in store.speaker_utterances(store.find_speaker("Sam").id)]
    mem.reassign(sams, "Speaker 2")
    assert store.find_speaker("Sam") is not None and store.find_speaker("Sam").utterances == 0
    check_invariants(mem)


def test_reassign_refuses_what_does_not_exist_and_changes_nothing(mem):
    store = mem.store
    first = store.speaker_utterances(store.find_speaker("Speaker 1").id)[0]
    with pytest.raises(InputError, match="no utterance 999999"):
        mem.reassign([first.id, 999999], "Speaker 2")
    with pytest.raises(InputError, match="no speaker 'Nobody'"):
        mem.reassign([first.id], "Nobody")
    with pytest.raises(InputError, match="no utterances"):
        mem.reassign([], "Speaker 2")
    assert store.utterances([first.id])[0].speaker == "Speaker 1"
    assert "reassign_utterances" not in [r[0] for r in store.db.all("SELECT action FROM audit")]
    # Reassigning a line to the speaker it already has is a no-op.
    assert mem.reassign([first.id], "Speaker 1").moved == ()


def test_reassign_to_someone_new_creates_them_with_the_lines_voice(mem):
    store = mem.store
    mem.flush()
    report = next(u for u in store.speaker_utterances(store.find_speaker("Speaker 3").id) if "report" in u.text)
    with store.atomic():
        store.set_utterance_voice(report.id, _voice(2), 3.0)
    result = mem.reassign([report.id], "Dana", new_speaker=True)
    dana = store.find_speaker("Dana")
    assert dana is not None and result.speaker.id == dana.id and result.moved == (report.id,)
    assert dana.utterances == 1 and dana.voice is not None and dana.voice[2] == pytest.approx(1.0)
    assert any(n.text.startswith("Dana: The report is due") for n in store.nodes())
    # A name that exists already, or one that would read as an id, is refused and nothing changes.
    hotel = store.speaker_utterances(store.find_speaker("Speaker 3").id)[0]
    with pytest.raises(InputError, match="exists already"):
        mem.reassign([hotel.id], "Dana", new_speaker=True)
    with pytest.raises(InputError, match="digits alone"):
        mem.reassign([hotel.id], "42", new_speaker=True)
    assert store.utterances([hotel.id])[0].speaker == "Speaker 3" and store.find_speaker("42") is None
    check_invariants(mem)


def test_a_speakers_last_lines_oldest_first(mem):
    lines = mem.speaker_lines("Speaker 2", limit=2)
    assert [u.text for u in lines] == [LINES[4][1], LINES[7][1]]
    assert [u.text for u in mem.speaker_lines("Speaker 2", limit=100)] == [t for s, t in LINES if s == "Speaker 2"]
    recent = mem.recent_utterances(3)
    assert [u.text for _sid, u in recent] == [t for _s, t in LINES[-3:]]
    assert all(mem.store.find_speaker(sid).name == u.speaker for sid, u in recent)
    with pytest.raises(InputError, match="no speaker 'Nobody'"):
        mem.speaker_lines("Nobody")


def test_speakers_reassign_command(tmp_path):
    from .test_cli import run

    sample = tmp_path / "talk.jsonl"
    sample.write_text(
        "\n".join(f'{{"speaker": "{s}", "text": "{t}", "time": {T0 + 30 * i}}}' for i, (s, t) in enumerate(LINES))
    )
    assert run(["ingest", str(sample)], tmp_path).returncode == 0
    # Speaker 3's lines from the fourth minute on were Speaker 1's.
    out = run(["speakers", "reassign", "Speaker 1", "--from", "Speaker 3", "--since", str(T0 + 150)], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "1 utterance(s) now said by speaker" in out.stdout and "'Speaker 1'" in out.stdout
    listed = run(["speakers"], tmp_path).stdout
    assert re.search(r"Speaker 1\s+4\s", listed) and re.search(r"Speaker 3\s+1\s", listed), listed
    # Then the other one by id: Speaker 3 is left with nothing and goes.
    with open_memory(tmp_path / "data") as mem:
        hotel = mem.utterances_between(speaker="Speaker 3")
    out = run(["speakers", "reassign", "Speaker 2", "--utterance", str(hotel[0])], tmp_path)
    assert out.returncode == 0 and "removed speaker(s) left with nothing" in out.stdout, out.stdout + out.stderr
    nothing = run(["speakers", "reassign", "Speaker 2"], tmp_path)
    assert nothing.returncode == 4 and "say which utterances" in nothing.stderr
    empty = run(["speakers", "reassign", "Speaker 2", "--since", str(T0 + 10_000)], tmp_path)
    assert empty.returncode == 4 and "no utterances match" in empty.stderr
    # Who is Speaker 2? Their last lines with the ids reassign takes; one of them was someone new.
    shown = run(["speakers", "lines", "Speaker 2", "--limit", "2"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = shown.stdout.strip().splitlines()
    assert len(rows) == 2 and rows[1].endswith(LINES[7][1]), shown.stdout
    last = rows[1].split()[0]
    out = run(["speakers", "reassign", "Robin", "--new", "--utterance", last], tmp_path)
    assert out.returncode == 0 and "1 utterance(s) now said by speaker" in out.stdout and "'Robin'" in out.stdout
    assert LINES[7][1] in run(["speakers", "lines", "Robin"], tmp_path).stdout


def test_a_forgotten_utterance_takes_its_voice_with_it(mem):
    from assistant.memory.forget import ForgetFilter

    store = mem.store
    three = store.find_speaker("Speaker 3")
    with store.atomic():
        for u in store.speaker_utterances(three.id):
            store.set_utterance_voice(u.id, _voice(2), 3.0)
    assert store.speaker_voice(three.id) is not None
    mem.forget(ForgetFilter(speaker="Speaker 3"))
    assert store.db.scalar("SELECT count(*) FROM utterance_voices") == 0


def test_alike_voices_are_suggested_for_merging_most_alike_first(mem, tmp_path):
    store = mem.store
    ids = {sp.name: sp.id for sp in mem.speakers()}
    close = _voice(0) + 0.2 * _voice(1)  # cosine 0.98 with axis 0
    nearish = _voice(0) + 0.45 * _voice(2)  # cosine 0.91: below the suggestion threshold
    with store.atomic():
        store.set_voice(ids["Speaker 1"], _voice(0), 60.0)
        store.set_voice(ids["Speaker 2"], close / np.linalg.norm(close), 5.0)
        store.set_voice(ids["Speaker 3"], nearish / np.linalg.norm(nearish), 30.0)
    assert mem.settings.diarization.suggest_merge_cosine == pytest.approx(0.93)
    (only,) = mem.merge_suggestions()
    assert (only.keep.name, only.other.name) == ("Speaker 1", "Speaker 2")  # keep: the one with more speech
    assert only.cosine == pytest.approx(0.981, abs=1e-3)
    # Nothing is merged by suggesting it.
    assert len(mem.speakers()) == 3


def test_speakers_command_shows_merge_suggestions(tmp_path):
    from .test_cli import run

    with open_memory(tmp_path / "data") as mem:
        mem.add_many([Utterance(s, t, T0 + 30 * i) for i, (s, t) in enumerate(LINES)])
        ids = {sp.name: sp.id for sp in mem.speakers()}
        with mem.store.atomic():
            mem.store.set_voice(ids["Speaker 1"], _voice(0), 60.0)
            mem.store.set_voice(ids["Speaker 3"], _voice(0), 6.0)
    out = run(["speakers"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert (
        f"perhaps one voice: {ids['Speaker 1']} 'Speaker 1' and {ids['Speaker 3']} 'Speaker 3' (cosine 1.00); "
        f"if so: assistant speakers merge {ids['Speaker 1']} {ids['Speaker 3']}"
    ) in out.stdout


def _at_cosine(cosine: float) -> np.ndarray:
    """A unit voice embedding whose cosine to `_voice(0)` is `cosine`."""
    return (cosine * _voice(0) + np.sqrt(1 - cosine**2) * _voice(1)).astype(np.float32)


def test_enrolled_seconds_add_up_and_follow_a_merge(mem):
    alice = mem.enroll("Alice", _voice(0), 10.0, 10.4)
    assert alice.enrolled and alice.enrolled_seconds == pytest.approx(10.4)
    again = mem.enroll("Alice", _voice(0), 20.0, 9.6)
    assert again.id == alice.id and again.enrolled_seconds == pytest.approx(20.0)
    # By id: the same speaker gains the recording.
    assert mem.enroll(str(alice.id), _voice(0), 25.0, 5.0).enrolled_seconds == pytest.approx(25.0)
    mem.enroll("Bob", _voice(1), 6.0, 6.0)
    assert mem.merge_speakers("Alice", "Bob").enrolled_seconds == pytest.approx(31.0)
    listed = {sp.name: sp for sp in mem.speakers()}
    assert listed["Alice"].enrolled_seconds == pytest.approx(31.0)
    assert all(listed[f"Speaker {n}"].enrolled_seconds == 0 for n in (1, 2, 3))


def test_an_enrollment_name_is_checked_and_digits_name_only_an_existing_speaker(mem):
    with pytest.raises(InputError, match="cannot be empty"):
        mem.enrollment_name("   ")
    with pytest.raises(InputError, match="at most 100 characters"):
        mem.enrollment_name("x" * 101)
    with pytest.raises(InputError, match="no speaker 4711: a name of digits alone is read as a speaker's id"):
        mem.enrollment_name("4711")
    two = mem.find_speaker("Speaker 2")
    assert mem.enrollment_name(str(two.id)) == str(two.id)
    assert mem.enrollment_name("  Ana   Lima ") == "Ana Lima"


def test_recent_match_is_the_median_cosine_of_the_last_20_lines_heard_with_a_voice(mem):
    store = mem.store
    two = mem.find_speaker("Speaker 2")
    one = mem.find_speaker("Speaker 1")
    # 25 more lines of Speaker 2, heard with a voice: the oldest five sound nothing like it, the newest
    # twenty at known cosines; two newer lines still came without one (typed, or imported).
    newest = [0.6 + 0.02 * i for i in range(20)]
    with store.atomic():
        store.set_voice(two.id, _voice(0), 60.0)
        store.set_voice(one.id, _voice(1), 30.0)
        for i, cosine in enumerate([0.0] * 5 + newest):
            said = mem.add("Speaker 2", f"Line {i} of the long talk about the quarterly numbers.", T0 + 1000 + i)
            store.set_utterance_voice(said.archived[0].id, _at_cosine(cosine), 2.0)
        mem.add("Speaker 2", "A typed line after them.", T0 + 2000)
        mem.add("Speaker 2", "And one more.", T0 + 2001)
    listed = {sp.name: sp for sp in mem.speakers()}
    two = listed["Speaker 2"]
    assert two.match_utterances == 20
    assert two.match_cosine == pytest.approx(float(np.median(newest)), abs=1e-3)
    # A voice with no line heard in it, and a speaker with no voice: nothing to say.
    assert (listed["Speaker 1"].match_cosine, listed["Speaker 1"].match_utterances) == (None, 0)
    assert listed["Speaker 3"].voice is None and listed["Speaker 3"].match_cosine is None
    # One speaker looked up says the same as the listing.
    assert store.find_speaker(two.id).match_cosine == two.match_cosine


def test_speakers_enrolled_before_the_seconds_were_kept_get_them_from_the_audit(tmp_path):
    data = tmp_path / "data"
    mem = open_memory(data)
    mem.enroll("Alice", _voice(0), 10.0, 12.0)
    mem.enroll("Alice", _voice(0), 18.0, 8.0)
    mem.enroll("Bob", _voice(1), 5.0, 5.5)
    db = mem.store.db
    # Back to schema 5: undo what migrations 0006 and 0007 made.
    undo_held_lines(db)
    db.execute("ALTER TABLE speakers DROP COLUMN enrolled_seconds")
    db.execute("DROP INDEX utterances_speaker_time")
    db.execute("CREATE INDEX utterances_speaker ON utterances(speaker_id)")
    db.execute("DELETE FROM migrations WHERE name = '0006_enrolled_seconds'")
    db.execute("PRAGMA user_version = 5")
    mem.close()
    with open_memory(data) as upgraded:
        listed = {sp.name: sp.enrolled_seconds for sp in upgraded.speakers()}
    assert listed == {"Alice": pytest.approx(20.0), "Bob": pytest.approx(5.5)}


def test_speakers_command_shows_enrolled_seconds_and_how_surely_recent_lines_matched(tmp_path):
    from .test_cli import run

    with open_memory(tmp_path / "data") as mem:
        mem.add_many([Utterance(s, t, T0 + 30 * i) for i, (s, t) in enumerate(LINES)])
        store = mem.store
        alice = mem.enroll("Alice", _voice(2), 21.0, 21.4)
        two = mem.find_speaker("Speaker 2")
        with store.atomic():
            store.set_voice(two.id, _voice(0), 9.0)
            for u, cosine in zip(store.speaker_utterances(two.id), (0.7, 0.8, 0.9), strict=True):
                store.set_utterance_voice(u.id, _at_cosine(cosine), 3.0)
    out = run(["speakers"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert re.search(rf"{alice.id}\s+Alice\s+0\s+0m21s\s+enrolled 0m21s\s+-\n", out.stdout), out.stdout
    assert re.search(r"Speaker 2\s+3\s+0m09s\s+learned\s+0\.80 of 3\n", out.stdout), out.stdout
    assert re.search(r"Speaker 3\s+2\s+0m00s\s+-\s+-\n", out.stdout), out.stdout
    assert "median cosine of its last (up to 20) utterances" in out.stdout
    assert "under 0.75 (diarization.match_threshold) no match" in out.stdout
    # An export carries the seconds enrolled, and an import restores them.
    assert run(["export", str(tmp_path / "all.json")], tmp_path).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    imported = run(["import", str(tmp_path / "all.json")], elsewhere)
    assert imported.returncode == 0, imported.stderr
    assert "enrolled 0m21s" in run(["speakers"], elsewhere).stdout
