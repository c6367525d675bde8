"""`assistant bench ...`: the benchmarks behind every speed, memory and quality claim in BENCHMARKS.md."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..atomic import write_text_atomically
from ..config import Settings, load_settings
from ..errors import InputError
from .systems import LOCOMO_SYSTEMS, LONGTERM_SYSTEMS, SYSTEMS

F = TypeVar("F", bound=Callable[..., Any])


def _write(path: Path | None, text: str) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, text)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the results: {exc.strerror}") from None
    click.echo(f"wrote {path}")


def _publish(report: dict[str, Any], markdown: str, json_out: Path | None, md_out: Path | None) -> None:
    """Every benchmark ends the same way: the table on stdout, then the files asked for."""
    click.echo(markdown)
    _write(json_out, json.dumps(report, indent=1))
    _write(md_out, markdown)


def _outputs(command: F) -> F:
    """--json OUT and --markdown OUT, which every benchmark takes."""
    command = click.option("--markdown", "md_out", type=click.Path(dir_okay=False, path_type=Path), default=None)(
        command
    )
    return click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None)(command)


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _categories(value: str | None) -> list[int]:
    """The LoCoMo categories a --categories value names (1-5); none = all."""
    try:
        cats = [int(c) for c in _csv(value)]
    except ValueError:
        raise InputError(f"--categories takes numbers 1-5, got {value!r}") from None
    if any(c not in range(1, 6) for c in cats):
        raise InputError(f"--categories takes numbers 1-5, got {value!r}")
    return cats


@click.group()
def bench() -> None:
    """Measure recall quality, latency and boundedness."""


@bench.command("locomo")
@click.option("--data", type=click.Path(path_type=Path), default=None, help="A LoCoMo-format JSON file.")
@click.option(
    "--systems",
    default=",".join(LOCOMO_SYSTEMS),
    show_default=True,
    help=f"Comma-separated; from {', '.join(SYSTEMS)}.",
)
@click.option("--conversations", default=None, help="Comma-separated sample ids (default: all).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Questions per conversation.")
@click.option("--categories", default=None, help="Comma-separated LoCoMo categories 1-5 (default: all).")
@click.option("--delay", type=click.IntRange(min=0), default=0, show_default=True, help="Probe N sessions later.")
@click.option(
    "--llm",
    "llm",
    default=None,
    help="The model that answers, for every system (default: models.llm); openai:URL for one an OpenAI-compatible "
    "server serves (e.g. openai:http://127.0.0.1:8080/v1; `full` still loads models.llm here).",
)
@_outputs
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Keep the memories.")
@click.option(
    "--checkpoint",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write each answer here as it comes; a stopped run given the same file resumes.",
)
@click.option(
    "--recall-only",
    is_flag=True,
    help="Build every context as usual but answer nothing (no LLM loaded): formation, recall, tokens, latency.",
)
@click.option(
    "--probes-use",
    is_flag=True,
    help="Let each probe count as a use of what it retrieved (raising its later scores), as asking once did.",
)
@click.pass_context
def locomo(
    ctx: click.Context,
    data: Path | None,
    systems: str,
    conversations: str | None,
    limit: int | None,
    categories: str | None,
    delay: int,
    llm: str | None,
    json_out: Path | None,
    md_out: Path | None,
    work_dir: Path | None,
    checkpoint: Path | None,
    recall_only: bool,
    probes_use: bool,
) -> None:
    """Stream LoCoMo conversations into each system; ask each question after its evidence and at the end."""
    from .locomo import count_steps, default_data, run_locomo, select_conversations
    from .locomo_report import locomo_json, locomo_markdown

    settings = load_settings(ctx.obj["config"])
    path = data or default_data(settings)
    if path is None:
        raise InputError(f"no LoCoMo file at bench.locomo_data ({settings.bench.locomo_data}); pass --data FILE")
    names = _csv(systems)
    cats = _categories(categories)
    convs = select_conversations(path, _csv(conversations))
    total = count_steps(convs, limit, cats, delay)
    with click.progressbar(length=total, label="locomo", show_eta=True, show_pos=True, file=None) as bar:

        def progress(steps: int, label: str) -> None:
            bar.label = label
            bar.update(steps)

        run = run_locomo(
            settings,
            path,
            convs,
            systems=names,
            limit=limit,
            categories=cats,
            delay=delay,
            answer_llm=llm,
            work_dir=work_dir,
            progress=progress,
            checkpoint=checkpoint,
            recall_only=recall_only,
            probes_use=probes_use,
        )
    report: dict[str, Any] = locomo_json(run)
    _publish(report, locomo_markdown(report), json_out, md_out)


@bench.command("longterm")
@click.option("--data", type=click.Path(path_type=Path), default=None, help="A LoCoMo-format JSON file.")
@click.option(
    "--systems",
    default=",".join(LONGTERM_SYSTEMS),
    show_default=True,
    help=f"Comma-separated; from {', '.join(SYSTEMS)}.",
)
@click.option("--conversations", default=None, help="Comma-separated sample ids (default: all).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="LoCoMo questions per conversation.")
@click.option("--categories", default=None, help="Comma-separated LoCoMo categories 1-5 (default: all).")
@click.option("--delay", type=click.IntRange(min=0), default=0, show_default=True, help="Probe N sessions later.")
@click.option(
    "--budget",
    type=click.IntRange(min=0),
    default=4096,
    show_default=True,
    help="The memory's token budget for the run (replaces memory.budget.token_budget; 0 keeps the config's). "
    "Scaled down from the product's 32,768 so a CPU finishes.",
)
@click.option(
    "--stream-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Make each woven stream at least this long (default: 10x the budget, 40,960 at 4,096).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the synthetic stream.")
@click.option("--llm", "llm", default=None, help="The model that answers, for every system (default: models.llm).")
@click.option(
    "--recall-only",
    is_flag=True,
    help="Build every context as usual but answer nothing (no LLM loaded): recall, facts held, tokens, latency.",
)
@_outputs
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Keep the memories.")
@click.pass_context
def longterm(
    ctx: click.Context,
    data: Path | None,
    systems: str,
    conversations: str | None,
    limit: int | None,
    categories: str | None,
    delay: int,
    budget: int,
    stream_tokens: int | None,
    seed: int,
    llm: str | None,
    recall_only: bool,
    json_out: Path | None,
    md_out: Path | None,
    work_dir: Path | None,
) -> None:
    """LoCoMo conversations woven into a synthetic stream 10x the memory's budget: questions and latest facts.

    Defaults are scaled down for a CPU: a budget of 4,096 tokens and streams of about 41,000.
    """
    from .locomo import default_data, select_conversations
    from .longterm import longterm_steps, run_longterm, weave_all
    from .longterm_report import longterm_json, longterm_markdown

    settings = load_settings(ctx.obj["config"])
    path = data or default_data(settings)
    if path is None:
        raise InputError(f"no LoCoMo file at bench.locomo_data ({settings.bench.locomo_data}); pass --data FILE")
    cats = _categories(categories)
    token_budget = budget or settings.memory.budget.token_budget
    length = stream_tokens or 10 * token_budget
    convs = select_conversations(path, _csv(conversations))
    streams = weave_all(settings, convs, stream_tokens=length, seed=seed, answer_llm=llm)
    total = longterm_steps(streams, limit, cats, delay)
    with click.progressbar(length=total, label="longterm", show_eta=True, show_pos=True, file=None) as bar:

        def progress(steps: int, label: str) -> None:
            bar.label = label
            bar.update(steps)

        run = run_longterm(
            settings,
            path,
            streams,
            token_budget=token_budget,
            stream_tokens=length,
            seed=seed,
            systems=_csv(systems),
            limit=limit,
            categories=cats,
            delay=delay,
            answer_llm=llm,
            work_dir=work_dir,
            progress=progress,
            recall_only=recall_only,
        )
    report = longterm_json(run)
    _publish(report, longterm_markdown(report), json_out, md_out)


@bench.command("scale")
@click.option(
    "--sizes", default="1000,10000,100000", show_default=True, help="Comma-separated stream sizes (checkpoints)."
)
@click.option(
    "--distill",
    "mode",
    type=click.Choice(["extractive", "llm"]),
    default="extractive",
    show_default=True,
    help="extractive skips the LLM in distillation so large sizes finish on a CPU.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the synthetic conversation.")
@click.option(
    "--embed-ahead/--embed-inline",
    default=True,
    show_default=True,
    help="Embed the utterances between the timed windows in batches (the windows always embed inline).",
)
@_outputs
@click.option(
    "--work-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Keep the memory (empty dir)."
)
@click.pass_context
def scale(
    ctx: click.Context,
    sizes: str,
    mode: str,
    seed: int,
    embed_ahead: bool,
    json_out: Path | None,
    md_out: Path | None,
    work_dir: Path | None,
) -> None:
    """Stream a synthetic conversation and show whether per-step cost stays flat as it grows."""
    from .scale import run_scale
    from .scale_report import scale_json, scale_markdown

    settings = load_settings(ctx.obj["config"])
    try:
        counts = [int(s) for s in _csv(sizes)]
    except ValueError:
        raise InputError(f"--sizes takes whole numbers like 1000,10000; got {sizes!r}") from None
    with click.progressbar(length=max(counts, default=0), label=f"scale ({mode})", show_eta=True) as bar:
        done = 0

        def progress(now: int, total: int) -> None:
            nonlocal done
            bar.update(now - done)
            done = now

        result = run_scale(
            settings,
            counts,
            distill_mode=mode,
            queries=settings.bench.scale_queries,
            seed=seed,
            progress=progress,
            data_dir=work_dir,
            embed_ahead=embed_ahead,
        )
    _publish(scale_json(result), scale_markdown(result), json_out, md_out)


@bench.command("speech")
@click.option("--data", type=click.Path(path_type=Path), default=None, help="A LoCoMo-format JSON file.")
@click.option("--conversations", default=None, help="Comma-separated sample ids (default: all).")
@click.option(
    "--turns",
    type=click.IntRange(min=2),
    default=None,
    help="Turns spoken per conversation (default 40), or per speaker set with --matrix (default 24).",
)
@click.option(
    "--overlap",
    type=click.FloatRange(0.0, 1.0),
    default=0.1,
    show_default=True,
    help="Share of speaker changes where the next turn starts before the previous one ends.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the pauses and overlaps.")
@click.option("--stt", default=None, help="Speech-to-text model (a models/manifest.yaml name; default: models.stt).")
@click.option(
    "--realtime-turns",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Turns per conversation fed again at wall-clock speed to time searchability (0: skip).",
)
@click.option(
    "--distill",
    "mode",
    type=click.Choice(["extractive", "llm"]),
    default="extractive",
    show_default=True,
    help="Memory distillation while listening; extractive keeps the LLM off the CPU the chain needs.",
)
@click.option(
    "--keep-audio", type=click.Path(file_okay=False, path_type=Path), default=None, help="Keep the recordings here."
)
@click.option(
    "--matrix",
    is_flag=True,
    help="Score speaker attribution over many voice sets (pairs, trios, a quartet, back-channel, overlaps, "
    "a monologue) instead of the two conversations.",
)
@click.option("--sets", default=None, help="With --matrix: comma-separated set numbers to hear (default: all).")
@click.option(
    "--enrolled",
    "enrolled_seconds",
    type=click.FloatRange(min=0.0),
    default=0.0,
    help="With --matrix: enroll each set's household first from this many seconds per voice (the last voice "
    "of a set of three or more stays a guest). Default 0: nothing enrolled.",
)
@click.option(
    "--alone-minutes",
    type=click.FloatRange(min=0.0),
    default=0.0,
    help="With --matrix: afterwards, one voice talks alone this long; the chain must hear one voice. Default 0: "
    "not heard.",
)
@_outputs
@click.pass_context
def speech(
    ctx: click.Context,
    data: Path | None,
    conversations: str | None,
    turns: int | None,
    overlap: float,
    seed: int,
    stt: str | None,
    realtime_turns: int,
    mode: str,
    keep_audio: Path | None,
    matrix: bool,
    sets: str | None,
    enrolled_seconds: float,
    alone_minutes: float,
    json_out: Path | None,
    md_out: Path | None,
) -> None:
    """Speak conversations with synthetic voices, listen with the real chain, score words, voices and speed."""
    import tempfile

    from .locomo import default_data
    from .speech_report import speech_json, speech_markdown
    from .speech_run import bench_settings, listening_seconds, run_speech
    from .speech_scripts import count_lines, prepare, read_scripts
    from .synth_conversation import Pacing
    from .synth_speech import check_tools

    settings = load_settings(ctx.obj["config"])
    path = data or default_data(settings)
    if path is None:
        raise InputError(f"no LoCoMo file at bench.locomo_data ({settings.bench.locomo_data}); pass --data FILE")
    if (enrolled_seconds or alone_minutes) and not matrix:
        raise InputError("--enrolled and --alone-minutes apply to the voice matrix: add --matrix")
    if matrix:
        _voice_matrix(
            bench_settings(settings, stt, mode),
            path,
            turns or 24,
            seed,
            sets,
            keep_audio,
            enrolled_seconds,
            alone_minutes,
            json_out,
            md_out,
        )
        return
    turns = turns or 40
    scripts = read_scripts(path, _csv(conversations), turns)
    check_tools()
    pacing = Pacing(overlap=overlap)
    settings = bench_settings(settings, stt, mode)
    with tempfile.TemporaryDirectory(prefix="assistant-speech-audio-") as tmp:
        audio_dir = keep_audio or Path(tmp)
        with click.progressbar(length=count_lines(scripts, realtime_turns), label="speaking", show_pos=True) as bar:
            prepared = prepare(
                scripts, audio_dir, pacing=pacing, seed=seed, realtime_turns=realtime_turns, progress=bar.update
            )
        total = listening_seconds(prepared)
        with click.progressbar(length=max(1, round(total)), label="listening", show_eta=True) as bar:
            heard = 0.0
            shown = 0

            def progress(seconds: float, label: str) -> None:
                nonlocal heard, shown
                bar.label = label
                heard += seconds
                if int(heard) > shown:
                    bar.update(int(heard) - shown)
                    shown = int(heard)

            run = run_speech(
                settings,
                path,
                prepared,
                turns=turns,
                seed=seed,
                realtime_turns=realtime_turns,
                pacing=pacing,
                progress=progress,
            )
    _publish(speech_json(run), speech_markdown(run), json_out, md_out)


def _voice_matrix(
    settings: Settings,
    path: Path,
    turns: int,
    seed: int,
    sets: str | None,
    keep_audio: Path | None,
    enrolled_seconds: float,
    alone_minutes: float,
    json_out: Path | None,
    md_out: Path | None,
) -> None:
    from .voice_matrix import run_matrix
    from .voice_matrix_report import matrix_json, matrix_markdown
    from .voice_matrix_sets import SETS

    chosen = list(SETS)
    if sets:
        try:
            numbers = [int(n) for n in _csv(sets)]
        except ValueError:
            raise InputError(f"--sets takes set numbers 0-{len(SETS) - 1}, comma-separated; got {sets!r}") from None
        bad = [n for n in numbers if not 0 <= n < len(SETS)]
        if bad:
            raise InputError(f"--sets: no set {bad[0]}; the matrix has sets 0-{len(SETS) - 1}")
        chosen = [SETS[n] for n in numbers]
    run = run_matrix(
        settings,
        path,
        turns=turns,
        seed=seed,
        sets=chosen,
        audio_dir=keep_audio,
        enrolled_seconds=enrolled_seconds,
        alone_minutes=alone_minutes,
        progress=lambda label: click.echo(label, err=True),
    )
    _publish(matrix_json(run), matrix_markdown(run), json_out, md_out)


@bench.command("daemon")
@click.option(
    "--clients", type=click.IntRange(min=1), default=20, show_default=True, help="Clients asking at the same time."
)
@click.option(
    "--questions-per-client", type=click.IntRange(min=1), default=2, show_default=True, help="Asked one after another."
)
@click.option(
    "--llm",
    default="qwen2.5-coder-0.5b-instruct",
    show_default=True,
    help="The model that answers (a models/manifest.yaml name).",
)
@click.option(
    "--turns",
    type=click.IntRange(min=2),
    default=None,
    help="Speak only the first N turns of the 20-turn script (a shorter run).",
)
@click.option(
    "--slow-interval",
    type=click.FloatRange(min=0.1),
    default=3.0,
    show_default=True,
    help="Seconds the slow live-transcript reader waits between lines.",
)
@click.option(
    "--keep", type=click.Path(file_okay=False, path_type=Path), default=None, help="Keep recordings, data and logs."
)
@_outputs
@click.pass_context
def daemon(
    ctx: click.Context,
    clients: int,
    questions_per_client: int,
    llm: str,
    turns: int | None,
    slow_interval: float,
    keep: Path | None,
    json_out: Path | None,
    md_out: Path | None,
) -> None:
    """Ask a real daemon questions from many clients while it hears a recording; compare with no load."""
    import shlex
    import sys
    import tempfile

    from .daemon_load import run_daemon_bench
    from .daemon_load_plan import SCRIPT, Plan
    from .daemon_load_report import daemon_markdown
    from .synth_speech import check_tools

    settings = load_settings(ctx.obj["config"])
    check_tools()
    plan = Plan(
        llm=llm,
        clients=clients,
        questions_per_client=questions_per_client,
        slow_interval=slow_interval,
        turns=turns or len(SCRIPT),
    )
    command = shlex.join(["assistant", *sys.argv[1:]])
    with tempfile.TemporaryDirectory(prefix="assistant-bench-daemon-") as tmp:
        work = keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        report = run_daemon_bench(settings, plan, work, command=command, progress=lambda m: click.echo(m, err=True))
    _publish(report, daemon_markdown(report), json_out, md_out)


@bench.command("tui")
@click.option("--questions", type=click.IntRange(min=1), default=10, show_default=True, help="Questions to ask.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.pass_context
def tui(ctx: click.Context, questions: int, json_out: Path | None) -> None:
    """Enter → first answer token in the TUI (Pilot, the running daemon), and keypress latency meanwhile."""
    import shlex
    import sys

    from ..daemon.client import DaemonClient
    from .tui_latency import run_tui_latency, tui_markdown

    settings = load_settings(ctx.obj["config"])
    client = DaemonClient.connect(settings)
    if client is None:
        raise InputError("no daemon is running for this config; start one (`assistant daemon`) and run this again")
    client.close()
    report = run_tui_latency(ctx.obj["config"], questions, lambda m: click.echo(m, err=True))
    command = shlex.join(["assistant", *sys.argv[1:]])
    click.echo(tui_markdown(report, command))
    _write(json_out, json.dumps(report, indent=1))


@bench.command("served")
@click.option(
    "--url", required=True, help="The server's API root, e.g. http://127.0.0.1:8080/v1 (llm.base_url's form)."
)
@click.option(
    "--llm",
    default=None,
    help="The model loaded here (default: models.llm): the GGUF the server runs, so only the hop differs.",
)
@click.option("--data", type=click.Path(path_type=Path), default=None, help="A LoCoMo-format JSON file.")
@click.option("--conversation", default=None, help="Its sample id (default: the file's first).")
@click.option(
    "--questions", type=click.IntRange(min=1), default=20, show_default=True, help="The conversation's first N."
)
@_outputs
@click.pass_context
def served(
    ctx: click.Context,
    url: str,
    llm: str | None,
    data: Path | None,
    conversation: str | None,
    questions: int,
    json_out: Path | None,
    md_out: Path | None,
) -> None:
    """Answer latency through an OpenAI-compatible server against the same model in this process."""
    import shlex
    import sys
    import tempfile
    from dataclasses import replace

    from .locomo import default_data, select_conversations
    from .served_latency import run_served_latency, served_json, served_markdown

    settings = load_settings(ctx.obj["config"])
    if llm is not None:
        settings = replace(settings, models=replace(settings.models, llm=llm))
    path = data or default_data(settings)
    if path is None:
        raise InputError(f"no LoCoMo file at bench.locomo_data ({settings.bench.locomo_data}); pass --data FILE")
    conv = select_conversations(path, [conversation] if conversation else [])[0]
    command = shlex.join(["assistant", *sys.argv[1:]])
    with tempfile.TemporaryDirectory(prefix="assistant-bench-served-") as tmp:
        run = run_served_latency(
            settings, conv, url, questions=questions, work_dir=Path(tmp), progress=lambda m: click.echo(m, err=True)
        )
    _publish(served_json(run, command), served_markdown(run, command), json_out, md_out)


# --- the everyday set (issue 35) -----------------------------------------------------------------


@bench.command("everyday")
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A directory with questions.yaml and its conversations (default: tests/fixtures/everyday).",
)
@click.option(
    "--llm",
    "llm",
    default=None,
    help="The model that answers (default: models.llm); distillation keeps the model it would use. "
    "openai:URL for one an OpenAI-compatible server serves.",
)
@_outputs
@click.pass_context
def everyday(
    ctx: click.Context, data: Path | None, llm: str | None, json_out: Path | None, md_out: Path | None
) -> None:
    """A few days of household and work talk, and questions in users' words, scored by what each answer must say."""
    from .everyday import Result, default_set, run_everyday
    from .everyday_report import everyday_json, everyday_markdown

    directory = data or default_set()
    if not (directory / "questions.yaml").is_file():
        raise InputError(f"no questions.yaml in {directory}; pass --data DIR")

    def progress(r: Result) -> None:
        click.echo(f"{'right' if r.right else 'WRONG'}  {r.question.id}: {r.reply!r}", err=True)

    run = run_everyday(load_settings(ctx.obj["config"]), directory, answer_llm=llm, progress=progress)
    report = everyday_json(run)
    _publish(report, everyday_markdown(report), json_out, md_out)
