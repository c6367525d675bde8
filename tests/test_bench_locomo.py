"""The LoCoMo benchmark: the official metrics, probe planning, and a real run of every system."""

from __future__ import annotations

import json
from datetime import UTC
from itertools import pairwise
from pathlib import Path

import pytest

from assistant.bench.checkpoint import ProbeLog
from assistant.bench.locomo import ProbeResult, plan_probes, run_locomo
from assistant.bench.locomo_metrics import bleu1, locomo_f1, normalize_answer, partial_f1, rouge_l, token_f1
from assistant.bench.locomo_report import locomo_json, locomo_markdown
from assistant.bench.systems import Answerer, Environment
from assistant.bench.systems.base import render_lines
from assistant.bench.systems.full import KEEP_AFTER_DROP, FullContextSystem
from assistant.bench.systems.prostream import ProStreamSystem
from assistant.config import Settings, load_settings
from assistant.embed import export_dir, load_embedder
from assistant.errors import InputError
from assistant.llm import LLM, load_tokenizer
from assistant.memory.answer import frame
from assistant.models import resolve
from assistant.records import Utterance
from assistant.transcripts import read_conversations

from .conftest import overrides
from .test_cli import run

SESSIONS = [
    (
        "10:00 am on 3 March, 2023",
        [
            ("Jon", "I finally booked the trip, we fly to Lisbon on the twelfth of April."),
            ("Gina", "Lisbon in April sounds lovely. Are you taking the kids?"),
            ("Jon", "Yes, both of them, and my sister Carla is coming too."),
            ("Gina", "You have to try the custard tarts in Belem."),
        ],
    ),
    (
        "6:30 pm on 20 March, 2023",
        [
            ("Gina", "My dance studio opened last week, we already have forty students."),
            ("Jon", "Forty students in one week is amazing. What styles do you teach?"),
            ("Gina", "Salsa and contemporary, and a hip hop class for teenagers on Saturdays."),
            ("Jon", "I might bring my daughter to the hip hop class."),
        ],
    ),
    (
        "9:15 am on 2 May, 2023",
        [
            ("Jon", "Back from Lisbon! The custard tarts were as good as you said."),
            ("Gina", "Told you. Did Carla enjoy it?"),
            ("Jon", "She loved the tram rides, she took hundreds of photos."),
        ],
    ),
]


def locomo_file(tmp_path: Path) -> Path:
    conv: dict[str, object] = {"speaker_a": "Jon", "speaker_b": "Gina"}
    for n, (stamp, turns) in enumerate(SESSIONS, start=1):
        conv[f"session_{n}_date_time"] = stamp
        conv[f"session_{n}"] = [
            {"speaker": s, "dia_id": f"D{n}:{i}", "text": t} for i, (s, t) in enumerate(turns, start=1)
        ]
    qa = [
        {"question": "Which city did Jon fly to in April?", "answer": "Lisbon", "evidence": ["D1:1"], "category": 4},
        {
            "question": "What styles does Gina teach?",
            "answer": "salsa, contemporary, hip hop",
            "evidence": ["D2:3"],
            "category": 1,
        },
        {
            "question": "Who came with Jon to Lisbon?",
            "answer": "his kids and his sister Carla",
            "evidence": ["D1:3; D3:2"],
            "category": 4,
        },
        {
            "question": "What is Gina's favourite film?",
            "adversarial_answer": "Casablanca",
            "evidence": ["D9:9"],
            "category": 5,
        },
    ]
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps([{"sample_id": "tiny-1", "conversation": conv, "qa": qa}]))
    return path


# --- the official metrics ------------------------------------------------------------------


def test_normalisation_matches_the_official_code():
    assert normalize_answer("The Trip, to Lisbon!") == "trip to lisbon"
    assert normalize_answer("salsa and hip-hop") == "salsa hiphop"


def test_token_f1_stems_and_ignores_articles():
    assert token_f1("The trip is in May 2023", "May 2023") == pytest.approx(2 * (2 / 5) * 1 / (2 / 5 + 1))
    assert token_f1("running", "runs") == 1.0  # Porter stems both to "run"
    assert token_f1("Paris", "Lisbon") == 0.0
    assert token_f1("", "Lisbon") == 0.0


def test_multi_hop_is_partial_f1_over_comma_parts():
    # Each gold part takes its best predicted part: 1, 1, 0.
    assert partial_f1("pottery, camping", "camping, pottery, painting") == pytest.approx(2 / 3)
    assert locomo_f1("pottery, camping", "camping, pottery, painting", 1) == pytest.approx(2 / 3)
    # The other categories compare the whole strings.
    assert locomo_f1("pottery, camping", "camping, pottery, painting", 4) == pytest.approx(0.8)


def test_open_domain_keeps_the_gold_before_the_semicolon():
    assert locomo_f1("likely yes", "likely yes; she likes dogs", 3) == 1.0


def test_adversarial_is_right_only_when_the_answer_says_it_is_not_there():
    assert locomo_f1("I don't know.", "Casablanca", 5) == 1.0
    assert locomo_f1("Not mentioned in the conversation", "Casablanca", 5) == 1.0
    assert locomo_f1("Casablanca", "Casablanca", 5) == 0.0


def test_bleu1_and_rouge_l():
    assert bleu1("May 2023", "May 2023") == 1.0
    # Two of three reference words, shorter than the reference: precision 1, brevity exp(1 - 3/2).
    assert bleu1("May 2023", "7 May 2023") == pytest.approx(0.6065, abs=1e-4)
    assert rouge_l("she went to the park", "she went park") == pytest.approx(2 * 0.75 * 1 / 1.75)
    assert rouge_l("", "anything") == 0.0


# --- probing ---------------------------------------------------------------------------------


def test_questions_are_probed_after_their_evidence_session_or_later(tmp_path):
    conv = read_conversations(locomo_file(tmp_path))[0]
    probes = {p.number: p for p in plan_probes(conv)}
    assert probes[0].evidence == {0} and probes[0].at == 3  # end of session 1
    assert probes[1].at == 7  # end of session 2
    assert probes[2].evidence == {2, 9} and probes[2].at == 10  # "D1:3; D3:2": both ids read
    # Evidence the stream does not hold: asked only once everything has streamed.
    assert probes[3].evidence == frozenset() and probes[3].unresolved == ("D9:9",) and probes[3].at == 10
    delayed = {p.number: p.at for p in plan_probes(conv, delay=1)}
    assert delayed[0] == 7 and delayed[1] == 10 and delayed[2] == 10
    assert [p.number for p in plan_probes(conv, categories=[4])] == [0, 2]
    assert len(plan_probes(conv, limit=1)) == 1


def test_bad_options_are_refused_with_a_reason(tmp_path):
    data = locomo_file(tmp_path)
    out = run(["bench", "locomo", "--data", str(data), "--systems", "prostream,magic"], tmp_path)
    assert out.returncode == 4 and "unknown system(s) magic" in out.stderr
    out = run(["bench", "locomo", "--data", str(data), "--conversations", "conv-99"], tmp_path)
    assert out.returncode == 4 and "no conversation(s) conv-99" in out.stderr
    out = run(["bench", "locomo", "--data", str(tmp_path / "absent.json")], tmp_path)
    assert out.returncode == 4 and "absent.json: no such file" in out.stderr
    used = tmp_path / "work"
    (used / "tiny-1" / "rag").mkdir(parents=True)
    (used / "tiny-1" / "rag" / "rag.db").write_bytes(b"")
    out = run(["bench", "locomo", "--data", str(data), "--work-dir", str(used)], tmp_path)
    assert out.returncode == 4 and "holds the memories of an earlier run" in out.stderr


# --- a real run ------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_system_streams_and_answers(tmp_path):
    """The whole stream through all five systems, and one question answered by each at both probes.

    Which lines each system recalls for every question is checked without the LLM
    (`test_recall_only_builds_every_context_and_never_opens_the_llm`); here the answers go through.
    """
    data = locomo_file(tmp_path)
    out_json, out_md = tmp_path / "out" / "r.json", tmp_path / "out" / "r.md"
    out = run(
        [
            "bench",
            "locomo",
            "--data",
            str(data),
            "--limit",
            "1",
            "--llm",
            "qwen2.5-coder-0.5b-instruct",
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ],
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out_json.read_text())
    assert report["format"] == "assistant-bench-locomo/2"
    assert report["meta"]["conversations"] == [{"name": "tiny-1", "utterances": 11, "questions": 1}]
    assert report["meta"]["answers"] == "llm" and report["meta"]["probes_use"] is False
    systems = report["systems"]
    assert set(systems) == {"prostream", "rag", "full", "recent-window", "recent"}
    required = {
        "f1",
        "evidence_recall",
        "context_tokens",
        "retrieval_ms_p50",
        "answer_ms_p50",
        "ingest_ms_per_utterance",
        "memory_tokens",
    }
    for name, s in systems.items():
        assert required <= set(s), name
        assert s["ingest_ms_per_utterance"] > 0 and s["memory_tokens"] > 0
    # One question, two probes, five systems.
    assert len(report["questions"]) == 10
    by = {(q["system"], q["probe"], q["number"]): q for q in report["questions"]}
    # RAG and full context keep everything of an 11-turn stream.
    assert by[("rag", "end", 0)]["formation"] == 1.0 and by[("full", "end", 0)]["evidence_recall"] == 1.0
    # The memory still represents the first session's evidence at the end, through its tree.
    assert by[("prostream", "end", 0)]["formation"] == 1.0
    for q in report["questions"]:
        assert q["prediction"] and q["answer_ms"] > 0, q
        assert 0.0 <= q["f1"] <= 1.0 and q["context_tokens"] >= 0
    # Whatever the small model answers, the full history holds Lisbon and it names it.
    assert "lisbon" in by[("full", "evidence", 0)]["prediction"].lower()
    assert "| prostream |" in out_md.read_text()


# --- resuming a stopped run ------------------------------------------------------------------


def _result(number: int, probe: str = "evidence", system: str = "rag") -> ProbeResult:
    return ProbeResult(system, "tiny-1", number, 4, probe, "Q?", "Lisbon", "Lisbon [1]", 1.0, 1.0, 1.0, 1.0, 1.0,
                       120, 3.5, 800.0)  # fmt: skip


def test_a_checkpoint_keeps_every_answer_and_refuses_another_runs(tmp_path):
    path, run_id = tmp_path / "answers.jsonl", {"data": "x.json", "systems": ["rag"], "limit": None}
    log = ProbeLog(path, run_id, ProbeResult)
    for n in range(3):
        log.add(_result(n))
    log.close()
    # Killed in the middle of writing a fourth: that line is cut away and the answer asked again.
    with path.open("a") as f:
        f.write('{"system": "rag", "conversa')
    again = ProbeLog(path, run_id, ProbeResult)
    assert len(again) == 3 and again.get(("rag", "tiny-1", 1, "evidence")) == _result(1)
    assert again.get(("rag", "tiny-1", 3, "evidence")) is None
    again.add(_result(3, "end"))
    again.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 5 and all(json.loads(line) for line in lines)

    with pytest.raises(InputError, match=r"answers.jsonl:1: .*another run \(systems was \['rag'\], now \['full'\]\)"):
        ProbeLog(path, {**run_id, "systems": ["full"]}, ProbeResult)
    lines[2] = '{"system": "rag"}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"answers.jsonl:3: not an answer of this benchmark"):
        ProbeLog(path, run_id, ProbeResult)
    path.write_text("[1, 2]\n")
    with pytest.raises(InputError, match=r"answers.jsonl:1: not a LoCoMo bench checkpoint"):
        ProbeLog(path, run_id, ProbeResult)


@pytest.mark.slow
def test_a_stopped_run_resumes_from_its_checkpoint_and_asks_only_what_is_missing(tmp_path):
    # One question per conversation (--limit 1): two probes for each of two systems are four
    # answers, enough to stop a run between them.
    data, checkpoint = locomo_file(tmp_path), tmp_path / "answers.jsonl"

    def bench(name: str, systems: str = "prostream,rag") -> tuple[int, str, dict]:
        out_json = tmp_path / f"{name}.json"
        args = ["bench", "locomo", "--data", str(data), "--systems", systems, "--limit", "1",
                "--llm", "qwen2.5-coder-0.5b-instruct", "--checkpoint", str(checkpoint),
                "--json", str(out_json)]  # fmt: skip
        out = run(args, tmp_path)
        return out.returncode, out.stderr, json.loads(out_json.read_text()) if out_json.exists() else {}

    code, err, first = bench("first")
    assert code == 0, err
    assert first["meta"]["resumed"] == 0
    lines = checkpoint.read_text().splitlines()
    assert len(lines) == 1 + 4  # the header, then 1 question x 2 probes x 2 systems
    # Stopped after two answers, the third half written.
    checkpoint.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])
    code, err, second = bench("second")
    assert code == 0, err
    assert second["meta"]["resumed"] == 2 and len(second["questions"]) == 4
    key = ("system", "probe", "number")
    before = {tuple(q[k] for k in key): q for q in first["questions"]}
    kept = [json.loads(line) for line in lines[1:3]]
    for q in kept:  # taken from the checkpoint word for word, timings included: not asked again
        assert q == before[tuple(q[k] for k in key)]
        assert q in second["questions"]
    # The two missing were asked again: new timings.
    again = [q for q in second["questions"] if q not in kept]
    assert len(again) == 2 and all(q["answer_ms"] != before[tuple(q[k] for k in key)]["answer_ms"] for q in again)
    assert len(checkpoint.read_text().splitlines()) == 1 + 4
    code, err, _ = bench("third", systems="rag")
    assert code == 4 and "belongs to another run (systems was ['prostream', 'rag'], now ['rag'])" in err


def test_an_earlier_checkpoint_format_is_refused(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"format": "assistant-bench-locomo-checkpoint/1", "run": {}}) + "\n")
    with pytest.raises(InputError, match=r"answers.jsonl:1: a checkpoint of an earlier version"):
        ProbeLog(path, {"systems": ["rag"]}, ProbeResult)


# --- recall only, observer probes, the long-context baseline ---------------------------------


def _settings(tmp_path: Path) -> Settings:
    over = overrides(tmp_path / "data", memory={"distill": {"mode": "extractive"}})
    return load_settings(user_file=tmp_path / "no-user-config.yaml", overrides=over)


def _no_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test at any attempt to open or ask an LLM (chat too: load_llm may hold one from another test)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an LLM was opened or asked")

    for name in ("__init__", "chat", "stream"):
        monkeypatch.setattr(LLM, name, refuse)


def _environment(settings: Settings, work_dir: Path, *, probes_use: bool = False) -> Environment:
    source = resolve(settings, "llm").source
    tokenizer = load_tokenizer(source)

    def refuse() -> LLM:
        raise AssertionError("these tests answer nothing")

    answerer = Answerer(refuse, tokenizer, settings.memory.answer.max_tokens, settings.llm.n_ctx)
    long = Answerer(refuse, tokenizer, settings.memory.answer.max_tokens, tokenizer.trained_context() or 0)
    embedder = load_embedder(
        resolve(settings, "embedder").source,
        settings.embedder.device,
        settings.embedder.threads,
        export_dir(settings.models_dir),
    )
    work_dir.mkdir(parents=True, exist_ok=True)
    return Environment(settings, embedder, answerer, long, work_dir, probes_use)


def test_recall_only_builds_every_context_and_never_opens_the_llm(tmp_path, monkeypatch):
    _no_llm(monkeypatch)
    data = locomo_file(tmp_path)
    result = run_locomo(_settings(tmp_path), data, read_conversations(data), recall_only=True)
    assert result.recall_only and len(result.results) == 40  # 4 questions x 2 probes x 5 systems
    for r in result.results:
        assert r.prediction is None and r.f1 is None and r.bleu1 is None and r.answer_ms is None
        assert r.retrieval_ms >= 0 and r.context_tokens >= 0
    by = {(r.system, r.probe, r.number): r for r in result.results}
    assert by[("full", "end", 2)].evidence_recall == 1.0 and by[("rag", "end", 0)].formation == 1.0
    # The short-term buffer shows all it holds; a question with no gold turn has nothing to look for.
    assert by[("recent", "end", 2)].formation == by[("recent", "end", 2)].evidence_recall
    assert by[("prostream", "evidence", 3)].formation is None
    assert any(r.context_tokens > 0 for r in result.results if r.system == "prostream")
    report = locomo_json(result)
    assert report["meta"]["answers"] == "none"
    assert report["systems"]["full"]["f1"] is None and report["systems"]["full"]["answer_ms_p50"] is None
    assert report["systems"]["full"]["evidence_recall"] == 1.0
    assert report["systems"]["rag"]["failures"]["end"]["retrieved"] >= 1
    markdown = locomo_markdown(report)
    assert "**Recall only**" in markdown and "**Evidence recall by category**" in markdown


def test_the_checkpoint_refuses_a_resume_with_other_probe_or_answer_settings(tmp_path, monkeypatch):
    _no_llm(monkeypatch)
    data, checkpoint = locomo_file(tmp_path), tmp_path / "answers.jsonl"
    settings, convs = _settings(tmp_path), read_conversations(locomo_file(tmp_path))
    first = run_locomo(settings, data, convs, systems=["rag"], recall_only=True, checkpoint=checkpoint)
    assert len(first.results) == 8
    again = run_locomo(settings, data, convs, systems=["rag"], recall_only=True, checkpoint=checkpoint)
    assert again.resumed == 8 and again.results == first.results
    with pytest.raises(InputError, match=r"another run \(probes_use was False, now True\)"):
        run_locomo(settings, data, convs, systems=["rag"], recall_only=True, probes_use=True, checkpoint=checkpoint)
    with pytest.raises(InputError, match=r"another run \(answers was 'none', now 'llm'\)"):
        run_locomo(settings, data, convs, systems=["rag"], checkpoint=checkpoint)


def _uses(system: ProStreamSystem) -> dict[int, tuple[int, float]]:
    return {n.id: (n.frequency, n.last_access) for n in system.memory.store.nodes()}


@pytest.mark.parametrize("probes_use", [False, True])
def test_a_probe_marks_the_memory_only_with_probes_use(tmp_path, probes_use):
    settings = _settings(tmp_path)
    system = ProStreamSystem(_environment(settings, tmp_path / "prostream", probes_use=probes_use))
    try:
        for position, u in enumerate(read_conversations(locomo_file(tmp_path))[0].utterances):
            system.add(position, u)
        system.end_of_stream()
        before = _uses(system)
        assert before, "the stream formed no node to retrieve"
        context = system.context("What did they say about the custard tarts?")
        assert context.positions and context.tokens > 0
        after_probe = _uses(system)
        system.replay("Who loved the tram rides?")
        after_replay = _uses(system)
        if probes_use:
            assert after_probe != before and after_replay != after_probe
            assert sum(f for f, _ in after_probe.values()) > sum(f for f, _ in before.values())
        else:
            assert after_probe == before and after_replay == before
    finally:
        system.close()


def test_the_models_trained_context_is_read_from_the_file(tmp_path):
    settings = _settings(tmp_path)
    assert load_tokenizer(resolve(settings, "llm").source).trained_context() == 32768


def _prompt_until_context(context: str, question: str) -> str:
    """The prompt up to the end of its context: what the next probe's prompt must begin with."""
    user = frame(context, question)[1]["content"]
    return frame(context, question)[0]["content"] + user[: user.index(context) + len(context)]


def test_full_holds_the_whole_conversation_and_extends_its_prompt(tmp_path):
    env = _environment(_settings(tmp_path), tmp_path / "full")
    system = FullContextSystem(env)
    assert system.window == 32768  # the model's trained context, not llm.n_ctx
    conv = read_conversations(locomo_file(tmp_path))[0]
    previous: str | None = None
    for position, u in enumerate(conv.utterances):
        system.add(position, u)
        question = f"What did they say at turn {position}?"
        context = system.context(question)
        assert context.positions == set(range(position + 1)) == system.remembered()
        full_prompt = "".join(m["content"] for m in frame(context.text, question))
        if previous is not None:
            assert full_prompt.startswith(previous)
        previous = _prompt_until_context(context.text, question)
    assert system.drops == 0


def test_full_drops_the_oldest_lines_in_chunks_when_the_window_overflows(tmp_path):
    env = _environment(_settings(tmp_path), tmp_path / "full")
    conv = read_conversations(locomo_file(tmp_path))[0]
    question = "Where did Jon go?"
    probe = FullContextSystem(env)
    overhead = env.long_answerer.frame_tokens(question) + env.long_answerer.max_tokens
    # Room for about sixteen of the tiny conversation's lines, streamed three times over.
    per_line = env.long_answerer.tokenizer.count(render_lines(conv.utterances, UTC)) / 11
    system = FullContextSystem(env, window=overhead + 128 + int(16 * per_line))
    # Each repeat after the one before: the context shows lines in time order, as a stream has them.
    span = conv.utterances[-1].time - conv.utterances[0].time + 86_400
    utterances = [Utterance(u.speaker, u.text, u.time + k * span) for k in range(3) for u in conv.utterances]
    prompts: list[tuple[int, str, str]] = []
    kept = 0
    for position, u in enumerate(utterances):
        system.add(position, u)
        probe.add(position, u)
        context = system.context(question)
        assert context.tokens <= system.window - overhead
        assert max(context.positions) == position  # the newest line is always there
        if prompts and system.drops > prompts[-1][0]:
            assert len(context.positions) <= kept - 2  # a chunk went, not the one line that overflowed
        kept = len(context.positions)
        prompts.append((system.drops, _prompt_until_context(context.text, question), context.text))
    # Chunks, not a sliding window: far fewer drops than lines.
    assert 2 <= system.drops <= len(utterances) // 5
    assert len(system.remembered()) < len(utterances)
    # Between drops every prompt extends the one before it, so llama.cpp reads only the new lines.
    for (drops_a, prefix_a, _), (drops_b, _, text_b) in pairwise(prompts):
        if drops_a == drops_b:
            assert "".join(m["content"] for m in frame(text_b, question)).startswith(prefix_a)
    assert KEEP_AFTER_DROP < 1
    # With the whole trained window, nothing of the same stream is dropped.
    assert probe.drops == 0 and probe.remembered() == set(range(len(utterances)))
