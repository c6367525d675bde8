import json
from datetime import UTC, datetime

import pytest

from assistant.errors import InputError
from assistant.transcripts import read_conversations

from .requirements import LOCOMO_MALFORMED, LOCOMO_MINI, need_locomo


def test_jsonl_with_iso_and_epoch_times(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(
        json.dumps({"speaker": "Ana", "text": "Hi", "time": "2026-01-02T03:04:05Z"})
        + "\n\n"
        + json.dumps({"speaker": "Bo", "text": "Hello", "time": 1767323046})
        + "\n"
    )
    (conv,) = read_conversations(p)
    assert [u.speaker for u in conv.utterances] == ["Ana", "Bo"]
    assert conv.utterances[0].time == 1767323045.0


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"speaker": "A", "text": "x"', "c.jsonl:2: not valid JSON"),
        ('{"speaker": "A", "text": "x"}', "c.jsonl:2: missing 'time'"),
        ('{"speaker": "", "text": "x", "time": 1}', "c.jsonl:2: 'speaker' must be a non-empty string"),
        ('{"speaker": "A", "text": "   ", "time": 1}', "c.jsonl:2: 'text' is empty"),
        ('{"speaker": "A", "text": "x", "time": "yesterday"}', "c.jsonl:2: 'time' 'yesterday' is not an ISO-8601"),
        ('{"speaker": "A", "text": "x", "time": 1, "mood": "ok"}', "c.jsonl:2: unknown key(s) mood"),
        ("[1, 2]", "c.jsonl:2: each line must be an object"),
        ('{"speaker": "A", "text": "\\ud800", "time": 1}', "unpaired surrogate"),
    ],
)
def test_malformed_rows_name_the_line(tmp_path, line, needle):
    p = tmp_path / "c.jsonl"
    p.write_text('{"speaker": "A", "text": "fine", "time": 1}\n' + line + "\n")
    with pytest.raises(InputError) as info:
        read_conversations(p)
    assert needle in str(info.value)


def test_invalid_utf8_names_the_line(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"speaker": "A", "text": "ok", "time": 1}\n{"speaker": "A", "text": "caf\xe9", "time": 2}\n')
    with pytest.raises(InputError, match=r"c.jsonl:2: not valid UTF-8"):
        read_conversations(p)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_conversations(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="is a directory"):
        read_conversations(tmp_path)


def test_empty_file_is_refused(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text("\n\n")
    with pytest.raises(InputError, match="no utterances"):
        read_conversations(p)


def test_a_locomo_file_reads_with_session_times_captions_refs_and_questions():
    mini1, mini2 = read_conversations(LOCOMO_MINI)
    assert (mini1.name, len(mini1.utterances), mini2.name, len(mini2.utterances)) == ("mini-1", 12, "mini-2", 6)
    assert mini1.refs[:3] == ("D1:1", "D1:2", "D1:3") and mini1.refs[-1] == "D3:3"
    # Each session starts at its date string (UTC); its turns follow 30 s apart, in order.
    times = [u.time for u in mini1.utterances]
    assert times[0] == datetime(2024, 3, 3, 10, 15, tzinfo=UTC).timestamp()
    assert times[5] == datetime(2024, 3, 17, 19, 40, tzinfo=UTC).timestamp()
    assert times[1] - times[0] == 30.0 and times == sorted(times)
    # A shared image is remembered by its caption, after the words; a turn with only an image too.
    assert mini1.utterances[2].text == (
        "Next Tuesday evening. I made my first bowl at the open day yesterday. "
        "[shares a photo: a photo of a small blue clay bowl on a wooden table]"
    )
    assert mini1.utterances[-1].text == "[shares a photo: a photo of two tall green vases on a market stall]"
    assert {u.speaker for u in mini1.utterances} == {"Nora", "Felix"}
    assert [q.category for q in mini1.questions] == [1, 2, 3, 4, 5]
    multi_hop, *_, adversarial = mini1.questions
    assert multi_hop.evidence == ("D1:3", "D3:1") and set(multi_hop.evidence) <= set(mini1.refs)
    # Category 5 has no answer, only the adversarial one the conversation never supports.
    assert (adversarial.answer, adversarial.evidence) == ("blue", ("D1:3",))
    assert mini2.questions[1].answer == "30"  # a number in the file, as some of LoCoMo's are


def test_a_malformed_locomo_file_names_the_sample_and_key():
    with pytest.raises(InputError) as info:
        read_conversations(LOCOMO_MALFORMED)
    assert str(info.value) == (
        f"{LOCOMO_MALFORMED} sample 0 session_2_date_time: session date 'the Sunday after' "
        "is not like '1:56 pm on 8 May, 2023'"
    )


def test_locomo_development_split_reads_with_times_and_refs():
    convs = read_conversations(need_locomo())
    conv26 = next(c for c in convs if c.name == "conv-26")
    assert len(conv26.utterances) == 419
    assert conv26.refs[0] == "D1:1"
    assert len(conv26.questions) == 199
    times = [u.time for u in conv26.utterances]
    assert times == sorted(times)
    assert {u.speaker for u in conv26.utterances} == {"Caroline", "Melanie"}
