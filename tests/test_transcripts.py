import json

import pytest

from assistant.errors import InputError
from assistant.transcripts import read_conversations

from .conftest import LOCOMO


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


def test_locomo_development_split_reads_with_times_and_refs():
    convs = read_conversations(LOCOMO)
    conv26 = next(c for c in convs if c.name == "conv-26")
    assert len(conv26.utterances) == 419
    assert conv26.refs[0] == "D1:1"
    assert len(conv26.questions) == 199
    times = [u.time for u in conv26.utterances]
    assert times == sorted(times)
    assert {u.speaker for u in conv26.utterances} == {"Caroline", "Melanie"}
