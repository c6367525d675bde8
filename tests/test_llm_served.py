"""`llm.backend: openai`: the served model's client, its configuration, and the memory answering through it.

The fast tests talk to a scripted HTTP server (tests/scripted_server.py) for the failures a real
one gives only by accident, or to a port nothing listens on; the slow ones to llama-cpp-python's
own server on the 0.5B model (tests/llm_server.py).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.bench.locomo import answer_llm_name, bench_settings
from assistant.config import Settings, load_settings
from assistant.errors import ConfigError, LLMUnreachable, ModelError
from assistant.llm import LOAD_LOG_ENV, OpenAIChat, load_llm
from assistant.llm.served import JSON_FORMS
from assistant.memory.api import Memory

from .conftest import overrides
from .llm_server import SERVED_MODEL, LLMServer, free_port, llm_server
from .scripted_server import Status, Stream, scripted
from .test_cli import run as run_cli
from .test_memory import sample

SAMPLE = Path(__file__).resolve().parents[1] / "assistant" / "data" / "sample_conversation.jsonl"

QUESTION = [{"role": "user", "content": "When is the trip?"}]


def served_settings(tmp_path: Path, **llm: Any) -> Settings:
    return load_settings(user_file=tmp_path / "absent.yaml", overrides={"llm": {"backend": "openai", **llm}})


def client(tmp_path: Path, base_url: str, **llm: Any) -> OpenAIChat:
    return OpenAIChat(served_settings(tmp_path, base_url=base_url, **llm).llm)


# --- failures, against a port nothing listens on or a scripted server ----------------------------


def test_an_unreachable_server_is_tried_with_backoff_then_named(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    llm = client(tmp_path, url, retries=2)
    started = time.monotonic()
    with pytest.raises(LLMUnreachable) as caught:
        llm.chat(QUESTION, max_tokens=8)
    took = time.monotonic() - started
    message = str(caught.value)
    assert message.startswith(f"the language model at {url} is unreachable: cannot connect"), message
    assert "tried 3 times" in message and "llm.base_url" in message
    # Two waits, 0.5 s then 1 s: backed off, not hammered.
    assert 1.5 <= took < 10, took
    assert llm.problem is not None and "cannot connect" in llm.problem


def test_503_and_429_before_the_first_token_are_tried_again(tmp_path):
    with scripted(Status(503), Status(429, headers={"Retry-After": "0"}), Stream(("Fri", "day"))) as server:
        llm = client(tmp_path, server.base_url, model="m")
        assert list(llm.stream(QUESTION, max_tokens=8)) == ["Fri", "day"]
        assert len(server.posts()) == 3
    assert llm.problem is None
    assert llm.usage.calls == 1


def test_a_reply_that_breaks_off_is_not_asked_again(tmp_path):
    with scripted(Stream(("On", " Friday", " at seven"), cut=1)) as server:
        llm = client(tmp_path, server.base_url, model="m")
        pieces: list[str] = []
        with pytest.raises(LLMUnreachable, match="is unreachable: the reply broke off"):
            for piece in llm.stream(QUESTION, max_tokens=8):
                pieces.append(piece)
        # The user saw "On": asking again would show a second, different beginning.
        assert pieces == ["On"]
        assert len(server.posts()) == 1


def test_a_refusal_is_not_tried_again_and_says_what_to_check(tmp_path):
    with scripted(Status(401, "invalid api key"), Status(404, "model 'x' not found")) as server:
        llm = client(tmp_path, server.base_url, model="x")
        with pytest.raises(ModelError, match=r"refused the request \(HTTP 401: invalid api key\).*llm.api_key_file"):
            llm.chat(QUESTION, max_tokens=8)
        with pytest.raises(ModelError, match=r"HTTP 404.*check llm.model \('x'\) and llm.base_url"):
            llm.chat(QUESTION, max_tokens=8)
        assert len(server.posts()) == 2
    # Refused is not unreachable: the server is there.
    assert llm.problem is None


def test_the_key_comes_from_a_file_or_the_environment(tmp_path, monkeypatch):
    key_file = tmp_path / "key"
    key_file.write_text("sk-from-file\n")
    monkeypatch.setenv("TEST_LLM_KEY", "sk-from-env")
    with scripted() as server:
        for llm in (
            client(tmp_path, server.base_url, model="m", api_key_file=str(key_file)),
            client(tmp_path, server.base_url, model="m", api_key_env="TEST_LLM_KEY"),
            client(tmp_path, server.base_url, model="m"),
        ):
            llm.chat(QUESTION, max_tokens=8)
        sent = [{k.lower(): v for k, v in s.headers.items()}.get("authorization") for s in server.posts()]
    assert sent == ["Bearer sk-from-file", "Bearer sk-from-env", None]


def test_without_a_model_name_the_first_one_the_server_lists_is_asked(tmp_path):
    with scripted() as server:
        client(tmp_path, server.base_url).chat(QUESTION, max_tokens=8)
        client(tmp_path, server.base_url, model="named").chat(QUESTION, max_tokens=8)
        assert [s.path for s in server.seen] == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]
        assert [s.body["model"] for s in server.posts() if s.body] == ["scripted-model", "named"]
        body = server.posts()[0].body
        assert body is not None and body["stream"] is True and body["max_tokens"] == 8


def test_a_schema_goes_in_the_first_response_format_the_server_takes(tmp_path):
    schema = {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}
    reply = Stream(('{"day": ', '"Friday"}'))
    with scripted(Status(422, "unknown response_format"), reply, reply) as server:
        llm = client(tmp_path, server.base_url, model="m")
        assert json.loads(llm.chat(QUESTION, max_tokens=16, schema=schema)) == {"day": "Friday"}
        assert json.loads(llm.chat(QUESTION, max_tokens=16, schema=schema)) == {"day": "Friday"}
        formats = [s.body.get("response_format") for s in server.posts() if s.body]
    assert formats == [
        {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}},
        {"type": "json_object", "schema": schema},  # llama-cpp-python's form...
        {"type": "json_object", "schema": schema},  # ...remembered
    ]
    # A server that takes neither is asked in words.
    with scripted(Status(400, "bad response_format"), Status(400, "bad response_format"), reply) as server:
        client(tmp_path, server.base_url, model="m").chat(QUESTION, max_tokens=16, schema=schema)
        last = server.posts()[-1].body
    assert last is not None and "response_format" not in last
    assert json.dumps(schema) in last["messages"][0]["content"]


def test_asking_without_the_daemon_when_the_server_is_gone_is_a_clear_error(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    served = f"llm:\n  backend: openai\n  base_url: {url}\n  retries: 0\n"
    # The sample's first two lines: the question finds its answer there, so it goes to the LLM.
    lines = tmp_path / "two-lines.jsonl"
    lines.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:2]))
    assert run_cli(["ingest", str(lines)], tmp_path, extra_config=served).returncode == 0
    out = run_cli(["ask", "When do we fly out to Lisbon?"], tmp_path, extra_config=served)
    assert out.returncode == 3, out.stderr
    # (llama.cpp itself may print a line about the tokenizer's context first.)
    assert f"\nerror: the language model at {url} is unreachable: cannot connect" in "\n" + out.stderr, out.stderr
    assert "Traceback" not in out.stderr


# --- configuration -------------------------------------------------------------------------------


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_openai_without_a_base_url_is_refused_naming_the_key_and_file(tmp_path):
    path = _config(tmp_path, "llm:\n  backend: openai\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, user_file=tmp_path / "absent.yaml")
    assert str(caught.value).startswith(f"{path}: llm.base_url must be set when llm.backend is openai")


def test_a_key_file_that_does_not_exist_is_refused_naming_the_key_and_file(tmp_path):
    missing = tmp_path / "no-such-key"
    path = _config(
        tmp_path, f"llm:\n  backend: openai\n  base_url: http://127.0.0.1:8080/v1\n  api_key_file: {missing}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(path, user_file=tmp_path / "absent.yaml")
    assert str(caught.value).startswith(f"{path}: llm.api_key_file names {missing}, which is not a file")


def test_other_served_llm_mistakes_are_refused(tmp_path, monkeypatch):
    bad_url = _config(tmp_path, "llm:\n  backend: openai\n  base_url: 127.0.0.1:8080/v1\n")
    with pytest.raises(ConfigError, match=r"config.yaml:3: llm.base_url must be an http:// or https:// address"):
        load_settings(bad_url, user_file=tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match=r"models\.distill_llm names a model for this process"):
        load_settings(
            user_file=tmp_path / "absent.yaml",
            overrides={
                "llm": {"backend": "openai", "base_url": "http://h/v1"},
                "models": {"distill_llm": "qwen2.5-coder-0.5b-instruct"},
            },
        )
    monkeypatch.delenv("NO_SUCH_KEY_VARIABLE", raising=False)
    settings = served_settings(tmp_path, base_url="http://h/v1", api_key_env="NO_SUCH_KEY_VARIABLE")
    with pytest.raises(ConfigError, match=r"llm\.api_key_env names the environment variable NO_SUCH_KEY_VARIABLE"):
        OpenAIChat(settings.llm)


def test_the_in_process_backend_stays_the_default(tmp_path):
    settings = load_settings(user_file=tmp_path / "absent.yaml")
    assert settings.llm.backend == "llama-cpp"
    assert settings.llm.api_key_file is None and settings.llm.api_key_env is None


# --- a real server: llama-cpp-python's, on the 0.5B model ---------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMServer]:
    with llm_server(tmp_path_factory.mktemp("llm-server")) as running:
        yield running


@pytest.mark.slow
def test_the_served_model_answers_and_streams(server, tmp_path):
    llm = client(tmp_path, server.base_url)
    pieces = list(llm.stream([{"role": "user", "content": "Count from one to five in words."}], max_tokens=24))
    assert len(pieces) >= 3, pieces
    assert "three" in "".join(pieces).lower()
    reply = llm.chat([{"role": "user", "content": "What is the capital of France? One word."}], max_tokens=8)
    assert "paris" in reply.lower() and reply == reply.strip()
    assert llm.usage.calls == 2
    assert llm.problem is None
    llm.probe()


@pytest.mark.slow
def test_the_served_model_keeps_to_a_schema(server, tmp_path, caplog):
    # A question in plain words, which the model answers in a sentence unless the server
    # constrains its decoding to the schema sent in response_format.
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "enum": ["Paris", "Lyon", "Marseille"]},
            "country_code": {"type": "string", "pattern": "^[A-Z]{2}$"},
        },
        "required": ["city", "country_code"],
        "additionalProperties": False,
    }
    llm = client(tmp_path, server.base_url)
    with caplog.at_level(logging.INFO, logger="assistant.llm.served"):
        reply = llm.chat(
            [{"role": "user", "content": "Which city is the capital of France?"}], max_tokens=48, schema=schema
        )
    parsed = json.loads(reply)
    assert set(parsed) == {"city", "country_code"} and parsed["city"] in ("Paris", "Lyon", "Marseille"), reply
    assert re.fullmatch(r"[A-Z]{2}", parsed["country_code"]), reply
    # llama-cpp-python's server refuses the json_schema form and takes json_object: the schema went
    # as response_format, not only in words (the last form, "prompt").
    assert JSON_FORMS[llm._json_form] == "json_object", caplog.text


@pytest.mark.slow
def test_the_memory_answers_through_the_server_without_loading_weights_here(server, tmp_path):
    load_log = Path(os.environ[LOAD_LOG_ENV])
    before = load_log.stat().st_size
    data = tmp_path / "data"
    served = {"backend": "openai", "base_url": server.base_url}
    settings = load_settings(
        user_file=tmp_path / "absent.yaml",
        # models.llm: the served model's own GGUF counts the tokens (its vocabulary only is read).
        overrides=overrides(data, llm=served, models={"llm": SERVED_MODEL}, memory={"distill": {"mode": "llm"}}),
    )
    mem = Memory(settings)
    try:
        # Both distillation and answers go to the server.
        requests = server.chat_requests()
        mem.add_many(sample())
        assert server.chat_requests() - requests >= 2
        assert isinstance(mem.llm, OpenAIChat) and mem.engine.distiller.llm is mem.llm
        answer = mem.ask("When do we fly out to Lisbon?")
        assert answer.knows, answer.text
        assert any("14th of May" in e.text for e in answer.evidence), (answer.text, answer.evidence)
    finally:
        mem.close()
    # The weights stayed on the server: only the tokenizer (vocabulary) was read here.
    assert load_log.stat().st_size == before, load_log.read_text()
    assert load_llm("unused", mem.settings.llm) is mem.llm


def test_bench_locomo_answers_with_a_served_model_given_openai_url(tmp_path):
    settings = load_settings(user_file=tmp_path / "absent.yaml")
    served = bench_settings(settings, "openai:http://127.0.0.1:8080/v1")
    assert (served.llm.backend, served.llm.base_url) == ("openai", "http://127.0.0.1:8080/v1")
    assert served.models.llm == settings.models.llm  # still the tokenizer
    assert answer_llm_name(served) == "openai:http://127.0.0.1:8080/v1"
    local = bench_settings(settings, SERVED_MODEL)
    assert (local.llm.backend, answer_llm_name(local)) == ("llama-cpp", SERVED_MODEL)
