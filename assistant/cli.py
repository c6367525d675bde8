"""The `assistant` command: thin click wrappers over `Memory` and the model manager.

Every `AssistantError` becomes one clean line on stderr and a non-zero exit code.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import shlex
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import locations
from .config import Settings, load_settings
from .daemon.service_cli import service
from .errors import AssistantError, InputError, ModelError
from .records import (
    FROM_ARCHIVE,
    NOT_RUNNING,
    Answer,
    Digest,
    ForgetFilter,
    ForgetOutcome,
    MemoryNode,
    MemoryStats,
    RecallFilter,
    SearchResult,
    Selection,
    Speaker,
)
from .transcripts import parse_time, read_conversations
from .zones import format_time, parse_day

if TYPE_CHECKING:
    from .memory.api import Memory
    from .service import MemoryService

DEMO_QUESTIONS = (
    "When is the Lisbon trip?",
    "What did Sam promise to send, and by when?",
    "Who is looking after Priya's dog, and what is the dog called?",
    "How much money did finance approve for the trip?",
    "What is Sam's favourite film?",
)
DATA = Path(__file__).parent / "data"
# demo_recording.ogg: made by tests/make_demo_recording.py from data/demo_recording.tsv.
DEMO_RECORDING_SPEAKERS = ("Sam", "Priya")
DEMO_RECORDING_START = parse_time("2026-11-16T09:02:00Z", "the demo")
DEMO_RECORDING_QUESTIONS = (
    "When do we fly to Lisbon, and when do we come back?",
    "What will Sam send, and by when?",
    "Who is looking after Priya's dog, and what is the dog called?",
    "How much money did finance approve for the trip?",
    "What is Sam's favourite film?",
)


# Command groups imported only when run, so `assistant --help` and the daemon's clients start
# without them (`bench` imports every system it compares): name -> (module, group, its help line).
LAZY_GROUPS = {"bench": ("assistant.bench.commands", "bench", "Measure recall quality, latency and boundedness.")}


class _Group(click.Group):
    """Every `AssistantError` from any subcommand becomes one clean line on stderr and its exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_GROUPS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_GROUPS:  # a stand-in for the command list; running it loads the group
            return click.Group(cmd_name, help=LAZY_GROUPS[cmd_name][2])
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name in LAZY_GROUPS:
            module, group, _help = LAZY_GROUPS[name]
            command = getattr(importlib.import_module(module), group)
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AssistantError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(exc.exit_code)


def _settings(ctx: click.Context, **overrides: Any) -> Settings:
    return load_settings(ctx.obj["config"], overrides=overrides or None)


def _memory(settings: Settings) -> Memory:
    """The memory engine, imported only by the commands that open one: the daemon's clients never
    load its libraries (usearch, onnxruntime)."""
    from .memory.api import Memory

    return Memory(settings)


def _open(ctx: click.Context) -> Memory:
    settings = _settings(ctx)
    _refuse_if_daemon(settings)
    return _memory(settings)


def _refuse_if_daemon(settings: Settings) -> None:
    """The daemon is the single writer of its data directory; the CLI goes through it or waits."""
    from .daemon.instance import running_pid

    pid = running_pid(settings)
    if pid is not None:
        raise InputError(
            f"the daemon (pid {pid}) is using {settings.data_dir}; this command works on the database "
            "directly, so stop the daemon first (`systemctl --user stop assistant`)"
        )


@contextmanager
def _service(ctx: click.Context) -> Iterator[MemoryService]:
    """The memory the commands act on: the running daemon's, or with none running the database
    opened here. Either way a `MemoryService`, so each command has one body."""
    from .daemon.client import DaemonClient

    settings = _settings(ctx)
    client = DaemonClient.connect(settings)
    if client is not None:
        with client:
            yield client
        return
    _refuse_if_daemon(settings)  # one starting, not answering yet: it will own the database
    from .memory.service import LocalMemory

    with LocalMemory(settings) as local:
        yield local


@click.group(cls=_Group)
@click.option(
    "--config",
    "config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A YAML file that overrides the defaults and your user config.",
)
@click.option("-v", "--verbose", count=True, help="Log more (-vv for debug).")
@click.pass_context
def main(ctx: click.Context, config: Path | None, verbose: int) -> None:
    """An on-device voice memory assistant: it remembers what was said and answers questions about it."""
    logging.basicConfig(
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s",
    )
    ctx.ensure_object(dict)
    ctx.obj["config"] = config
    ctx.obj["log_level"] = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]


def print_answer(answer: Answer, *, stream_done: bool = False, zone: tzinfo | None = None) -> None:
    """The answer (unless it was streamed) and its citations, timed in `zone` (None = the system's)."""
    if not stream_done:
        click.echo(answer.text)
    if answer.from_archive:
        click.secho(f"  ({FROM_ARCHIVE})", fg="yellow")
    for ev in answer.evidence:
        click.secho("  \u2514 " + ev.cite(zone), fg="cyan")


def _ask(service: MemoryService, question: str, zone: tzinfo, **recall: Any) -> Answer:
    """Stream one answer to the terminal, then its citations; `recall` takes since, until and speaker."""
    answer = None
    for item in service.ask(question, **recall):
        if isinstance(item, Answer):
            answer = item
        else:
            click.echo(item, nl=False)
    click.echo()
    assert answer is not None
    print_answer(answer, stream_done=True, zone=zone)
    return answer


def _recall_options(fn: Any) -> Any:
    """--since, --until and --speaker: what `ask` and `search` may recall."""
    fn = click.option("--speaker", default=None, help="Only what this speaker said (name or id).")(fn)
    fn = click.option("--until", default=None, help="Only what was said before this time.")(fn)
    return click.option(
        "--since",
        default=None,
        help="Only what was said from this time on: ISO-8601 (local time unless it names an offset) or epoch seconds.",
    )(fn)


def _recall(since: str | None, until: str | None, speaker: str | None, zone: tzinfo) -> dict[str, Any]:
    """The options as `Memory.search`/`prepare` and the daemon client take them, checked before
    any model loads: a malformed time or an empty window is refused naming the option. A time
    without an offset is read in `zone` (`time_zone`), the one answers show times in."""
    from .zones import check_window

    window = {"since": _when(since, "--since", zone), "until": _when(until, "--until", zone)}
    check_window(window["since"], window["until"], ("--since", "--until"), zone)
    return {**window, "speaker": speaker}


def _show_filter(f: RecallFilter, zone: tzinfo) -> None:
    described = f.describe(zone)
    if described:
        click.secho(f"  ({described})", dim=True)


@main.command()
@click.argument("question", required=False)
@click.option(
    "--questions",
    "questions_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Ask every line of this file in turn (models load once).",
)
@click.option("--timings", is_flag=True, help="Also print retrieval and answer latency and the context size.")
@_recall_options
@click.pass_context
def ask(
    ctx: click.Context,
    question: str | None,
    questions_file: Path | None,
    timings: bool,
    since: str | None,
    until: str | None,
    speaker: str | None,
) -> None:
    """Ask the memory a question; the answer streams, then its evidence.

    --since/--until/--speaker limit what it may recall: --speaker Sam --since 2026-11-16 only
    hears what Sam said from then on. The question's own words ("last week") may limit it too.
    """
    zone = _settings(ctx).zone
    recall = _recall(since, until, speaker, zone)
    if questions_file is not None:
        try:
            questions = [q.strip() for q in questions_file.read_text(encoding="utf-8").splitlines() if q.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{questions_file}: cannot read questions: {exc}") from None
    elif question is not None:
        questions = [question]
    else:
        raise click.UsageError("give a QUESTION or --questions FILE")
    answers = []
    with _service(ctx) as service:
        for q in questions:
            if len(questions) > 1:
                click.secho(f"Q: {q}", bold=True)
            answer = _ask(service, q, zone, **recall)
            answers.append(answer)
            _show_filter(answer.filter, zone)
            if timings:
                click.echo(
                    f"retrieval {answer.retrieval_ms:.1f} ms, answer {answer.answer_ms:.0f} ms, "
                    f"context {answer.context_tokens} tokens",
                    err=True,
                )
    if timings and len(answers) > 1:
        click.echo(_latency_summary(answers), err=True)


@main.command()
@click.argument("query")
@_recall_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (as the daemon's POST /search).")
@click.pass_context
def search(
    ctx: click.Context, query: str, since: str | None, until: str | None, speaker: str | None, as_json: bool
) -> None:
    """What an answer to QUERY would see, without asking the LLM: the recalled lines, then the tree paths.

    Through the daemon when one runs, else on the database directly (read only; the LLM is never loaded).
    """
    zone = _settings(ctx).zone
    recall = _recall(since, until, speaker, zone)
    with _service(ctx) as service:
        found = service.search(query, **recall)
    if as_json:
        from .wire import to_json

        click.echo(json.dumps(to_json(found), ensure_ascii=False, indent=2))
    else:
        _print_search(found, zone)


def _print_search(found: SearchResult, zone: tzinfo) -> None:
    click.echo(found.filter.describe(zone) or "not limited by time or speaker")
    click.secho(f"recalled lines ({len(found.lines)}):" if found.lines else "recalled lines: none", bold=True)
    if found.from_archive:
        click.secho(f"  ({FROM_ARCHIVE})", fg="yellow")
    for line in found.lines:
        click.echo(
            f"  {line.score:.3f}  {click.style(line.speaker, bold=True)} {format_time(line.time, zone)}  {line.text}"
        )
        for ev in line.history:
            click.secho(f"         earlier: {ev.speaker} {format_time(ev.time, zone)}  {ev.text}", dim=True)
    if found.replies:
        click.secho(f"replies to the best matches ({len(found.replies)}):", bold=True)
        for ev in found.replies:
            click.echo(f"         {click.style(ev.speaker, bold=True)} {format_time(ev.time, zone)}  {ev.text}")
    click.secho(f"tree paths ({len(found.paths)}):" if found.paths else "tree paths: none", bold=True)
    for path in found.paths:
        click.echo(f"  {path.score:.3f}  {path.scene} \u203a {path.event.text}")
        for unit in path.units:
            click.echo(f"         \u00b7 {unit.text}")
        for ev in path.sources:
            click.secho("         \u2514 " + ev.cite(zone), fg="cyan")


def _latency_summary(answers: list[Answer]) -> str:
    from .bench.stats import percentile

    r = [a.retrieval_ms for a in answers]
    t = [a.retrieval_ms + a.answer_ms for a in answers]
    c = [float(a.context_tokens) for a in answers]
    return (
        f"{len(answers)} questions: retrieval median {percentile(r, 0.5):.1f} ms (p95 {percentile(r, 0.95):.1f}); "
        f"retrieval + answer median {percentile(t, 0.5) / 1000:.2f} s (p95 {percentile(t, 0.95) / 1000:.2f}); "
        f"context median {percentile(c, 0.5):.0f} tokens"
    )


@main.command()
@click.argument("day", required=False)
@click.option(
    "--markdown",
    "notes_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write the day as a note for note-taking apps: DIR/YYYY-MM-DD.md, with YAML front matter.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the digest as JSON (as the daemon's GET /digest).")
@click.pass_context
def digest(ctx: click.Context, day: str | None, notes_dir: Path | None, as_json: bool) -> None:
    """What DAY's conversations were about, and who said they would do what (and by when), each with
    the lines it rests on.

    DAY is YYYY-MM-DD, today (the default) or yesterday, midnight to midnight in time_zone. Built
    from what is remembered now; the LLM confirms the commitments.
    """
    import time

    zone = _settings(ctx).zone
    wanted = parse_day(day, zone, time.time()) if day is not None else None
    with _service(ctx) as service:
        found = service.digest(wanted)
    if notes_dir is not None:
        from .memory.notes import write_note

        click.echo(f"wrote {write_note(found, notes_dir, zone)}", err=as_json)
    if as_json:
        from .wire import to_json

        click.echo(json.dumps(to_json(found), ensure_ascii=False, indent=2))
    else:
        _print_digest(found, zone)


# Lines quoted under a topic in the terminal; `--json` has them all.
QUOTED_PER_TOPIC = 2


def _print_digest(found: Digest, zone: tzinfo) -> None:
    from .memory.notes import commitment_line

    heading = f"{found.day} ({found.zone})"
    if not found.utterances:
        click.echo(f"{heading}: nothing was remembered from that day")
        return
    click.secho(f"{heading}: {found.utterances} lines, from {', '.join(found.speakers)}", bold=True)
    if found.unfiled:
        click.secho(f"({found.unfiled} lines not in the memory tree yet: their topics come once filed)", dim=True)
    click.secho(f"topics ({len(found.topics)}):" if found.topics else "topics: none", bold=True)
    for item in found.topics:
        click.echo(f"  {item.scene} \u203a {item.text}")
        for ev in item.evidence[:QUOTED_PER_TOPIC]:
            click.secho("      \u2514 " + ev.cite(zone), fg="cyan")
        if len(item.evidence) > QUOTED_PER_TOPIC:
            click.secho(f"      and {len(item.evidence) - QUOTED_PER_TOPIC} more lines", dim=True)
    click.secho(f"commitments ({len(found.commitments)}):" if found.commitments else "commitments: none", bold=True)
    for c in found.commitments:
        click.echo("  " + commitment_line(c))
        for ev in c.evidence:
            click.secho("      \u2514 " + ev.cite(zone), fg="cyan")


AUDIO_SUFFIXES = {".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aiff", ".aif", ".au"}


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--no-flush", is_flag=True, help="Leave the last utterances in the short-term buffer.")
@click.option("--only", "only", multiple=True, help="Only these conversations of a LoCoMo file (sample_id).")
@click.option("--realtime", is_flag=True, help="Audio: pace the file as if it were being recorded now.")
@click.option("--start", "start", default=None, help="Audio: when the recording began (ISO-8601; default its mtime).")
@click.pass_context
def ingest(
    ctx: click.Context, file: Path, no_flush: bool, only: tuple[str, ...], realtime: bool, start: str | None
) -> None:
    """Remember a conversation from FILE: a recording (WAV, FLAC, ...), JSON Lines of {speaker, text, time},
    or LoCoMo JSON."""
    if file.suffix.lower() in AUDIO_SUFFIXES:
        _ingest_audio(ctx, file, realtime, parse_time(start, "--start") if start else None)
        return
    conversations = read_conversations(file)
    if only:
        known = [c.name for c in conversations]
        missing = [n for n in only if n not in known]
        if missing:
            raise InputError(f"{file}: no conversation named {', '.join(missing)} (it has {', '.join(known)})")
        conversations = [c for c in conversations if c.name in only]
    with _open(ctx) as memory:
        for conv in conversations:
            with click.progressbar(
                length=len(conv.utterances), label=f"{conv.name}", show_eta=True, file=sys.stderr
            ) as bar:
                report = memory.add_many(conv.utterances, flush=not no_flush, progress=lambda _i, b=bar: b.update(1))
            click.echo(
                f"{conv.name}: {report.utterances} utterances remembered"
                f"{f', {report.duplicates} already known' if report.duplicates else ''}, "
                f"{report.blocks} blocks filed in {report.seconds:.1f} s "
                f"({1000 * report.seconds / max(1, len(conv.utterances)):.0f} ms per utterance)"
            )
        _print_stats(memory.stats())


def _ingest_audio(ctx: click.Context, file: Path, realtime: bool, start: float | None) -> None:
    from .audio.sources import open_source
    from .listening import Listener

    settings = _settings(ctx)
    _refuse_if_daemon(settings)
    source = open_source(file, settings.audio, realtime=realtime, start_time=start)
    total = getattr(source, "duration", None)
    with _memory(settings) as memory, source:
        listener = Listener.from_settings(memory, settings)
        with click.progressbar(
            length=max(1, math.ceil(total or 0)), label=file.name, show_eta=True, file=sys.stderr
        ) as bar:
            shown = 0

            def advanced(seconds: float) -> None:
                nonlocal shown
                if int(seconds) > shown:
                    bar.update(int(seconds) - shown)
                    shown = int(seconds)

            report = listener.run(source.blocks(), settings, on_audio=advanced)
        names = {sp.id: sp.name for sp in memory.speakers()}
        # A speaker the re-clustering emptied is gone; those it founded were heard too.
        heard = sorted((report.speakers | report.relabelled_to) & set(names))
        found = ", ".join(names[i] for i in heard) or "none"
        minutes, seconds = divmod(round(report.audio_seconds), 60)
        relabelled = f" ({report.relabelled} relabelled by re-clustering)" if report.relabelled else ""
        click.echo(
            f"{file.name}: {minutes}m{seconds:02d}s of audio, {report.segments} speech segments, "
            f"{report.utterances} utterances remembered{relabelled}; speakers: {found}"
        )
        click.echo(
            f"real-time factor {report.real_time_factor(report.wall_seconds):.2f} (VAD "
            f"{report.real_time_factor(report.vad_seconds):.3f}, speech to text "
            f"{report.real_time_factor(report.stt_seconds):.3f}, speakers "
            f"{report.real_time_factor(report.diarize_seconds):.3f}, memory "
            f"{report.real_time_factor(report.memory_seconds):.3f})"
        )
        _print_stats(memory.stats())


@main.command()
@click.option("--device", default=None, help="Microphone: part of its name, or its index (default: audio.device).")
@click.pass_context
def listen(ctx: click.Context, device: str | None) -> None:
    """Listen to the microphone in the foreground and remember what is said (Ctrl-C stops)."""
    from .audio.sources import open_source
    from .listening import Heard, Listener

    settings = _settings(ctx, **({"audio": {"device": device}} if device else {}))
    _refuse_if_daemon(settings)
    with _memory(settings) as memory:
        listener = Listener.from_settings(memory, settings)
        listener.warm_up()
        source = open_source(None, settings.audio)
        click.secho(f"listening on {source.description} (Ctrl-C stops)", bold=True, err=True)

        def show(heard: Heard) -> None:
            u = heard.utterance
            click.echo(f"[{format_time(u.time, settings.zone)}] {click.style(u.speaker, bold=True)}: {u.text}")

        try:
            with source:
                listener.run(source.blocks(), settings, on_heard=show)
        except KeyboardInterrupt:
            memory.flush()
            click.echo("stopped; what was heard is remembered", err=True)


def _print_stats(s: MemoryStats) -> None:
    click.echo(
        f"memory: {s.tokens:,} / {s.token_budget:,} tokens, {s.scenes} scenes, {s.events} events, "
        f"{s.amus} units; {s.utterances} utterances archived, {s.buffered} buffered, "
        f"{s.pending_blocks} pending"
    )


def _print_tree(nodes: list[MemoryNode], depth: int = 0) -> None:
    for n in nodes:
        label = {"scene": "\u25a0", "event": "\u25b8", "amu": "\u00b7"}[n.level.value]
        meta = f"u={n.utility:.2f} {n.tokens}t f={n.frequency}"
        line = f"{'  ' * depth}{label} {n.text}"
        click.echo(f"{line}  " + click.style(f"[#{n.id} {meta}]", dim=True))
        _print_tree(list(n.children), depth + 1)


@main.command()
@click.pass_context
def memory(ctx: click.Context) -> None:
    """Show the memory tree (scene > event > unit) with utility, tokens and the budget."""
    with _service(ctx) as service:
        _print_tree(service.tree())
        _print_stats(service.status().memory)


@main.command()
@click.argument("node_id", type=int)
@click.pass_context
def delete(ctx: click.Context, node_id: int) -> None:
    """Delete memory node NODE_ID and everything under it."""
    with _service(ctx) as service:
        removed = service.delete_node(node_id)
    click.echo(f"removed {len(removed)} node(s)")


@main.command()
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the demo's memory in this directory instead of a temporary one.",
)
@click.option(
    "--text",
    "text_only",
    is_flag=True,
    help="Remember the bundled text conversation instead of listening to the recording.",
)
@click.pass_context
def demo(ctx: click.Context, keep: Path | None, text_only: bool) -> None:
    """Listen to a short bundled two-voice recording, then answer questions about it with evidence."""
    from .memory.service import LocalMemory

    with tempfile.TemporaryDirectory(prefix="assistant-demo-") as tmp:
        settings = _settings(ctx, paths={"data_dir": str(keep or tmp)})
        with _memory(settings) as mem:
            if text_only:
                _demo_text(mem)
                questions = DEMO_QUESTIONS
            else:
                _demo_recording(mem, settings)
                questions = DEMO_RECORDING_QUESTIONS
            _print_stats(mem.stats())
            click.echo()
            local = LocalMemory(settings, mem)
            _print_tree(local.tree())
            for q in questions:
                click.echo()
                click.secho(f"Q: {q}", bold=True)
                _ask(local, q, settings.zone)


def _demo_text(mem: Memory) -> None:
    sample = DATA / "sample_conversation.jsonl"
    conv = read_conversations(sample)[0]
    click.secho(f"Remembering {len(conv.utterances)} utterances from {sample.name} ...", bold=True)
    for u in conv.utterances:
        click.echo("  " + textwrap.shorten(f"{u.speaker}: {u.text}", 98))
    report = mem.add_many(conv.utterances)
    click.echo(f"Filed {report.blocks} blocks in {report.seconds:.1f} s.")


def _demo_recording(mem: Memory, settings: Settings) -> None:
    from .audio.sources import open_source
    from .listening import Heard, Listener

    recording = DATA / "demo_recording.ogg"
    source = open_source(recording, settings.audio, start_time=DEMO_RECORDING_START)
    click.secho(f"Listening to {recording.name} ({source.duration:.0f} s, two voices) ...", bold=True)

    def show(heard: Heard) -> None:
        click.echo("  " + textwrap.shorten(f"{heard.utterance.speaker}: {heard.utterance.text}", 98))

    with source:
        report = Listener.from_settings(mem, settings).run(source.blocks(), settings, on_heard=show)
    click.echo(
        f"Heard {report.utterances} utterances from {len(report.speakers)} voices in "
        f"{report.wall_seconds:.1f} s (real-time factor {report.real_time_factor(report.wall_seconds):.2f})."
    )
    # The voices are unnamed until someone says who they are; the demo knows the order they speak in.
    first_heard = sorted(mem.speakers(), key=lambda sp: sp.id)
    for sp, name in zip(first_heard, DEMO_RECORDING_SPEAKERS, strict=False):
        mem.rename_speaker(sp.id, name)
        click.echo(f"  assistant speakers name {sp.id} {name}  # {sp.name} is {name}: transcript and memory relabelled")


@main.group()
def models() -> None:
    """Install and check the models the assistant uses."""


@models.command("install")
@click.argument("names", nargs=-1)
@click.pass_context
def models_install(ctx: click.Context, names: tuple[str, ...]) -> None:
    """Install the configured models (or NAMES from models/manifest.yaml) and verify their checksums."""
    from . import models as registry

    settings = _settings(ctx)
    rows = registry.install(settings, list(names) or None, progress=lambda m: click.echo(m, err=True))
    click.echo(registry.format_status(rows))
    if any(r.state != "ok" for r in rows):
        sys.exit(3)
    _export_embedder(settings)
    _export_speaker(settings)


def _export_embedder(settings: Settings) -> None:
    """Export the configured sentence embedder for onnxruntime now, so the first daemon start need
    not (embed.py); on a GPU it runs with torch and needs no export."""
    from . import models as registry
    from .devices import pick_device
    from .embed import export_dir, onnx_file, prepare_onnx

    try:
        path = registry.resolve(settings, "embedder").path
    except ModelError as exc:  # a configured embedder that is not installed: said when it loads
        click.echo(f"models.embedder: {exc}", err=True)
        return
    if path is None or not path.is_dir() or pick_device(settings.embedder.device) != "cpu":
        return
    cache_dir = export_dir(settings.models_dir)
    _export_once(settings.models.embedder, onnx_file(path, cache_dir), lambda: prepare_onnx(path, cache_dir))


def _export_speaker(settings: Settings) -> None:
    """Export the configured Resemblyzer speaker encoder for onnxruntime now, so the first daemon
    start need not (speech/voice_encoders.py); an ONNX speaker model, or a GPU, needs no export."""
    from .speech import ge2e
    from .speech.voice_encoders import encoder_spec, onnx_export

    try:
        export = onnx_export(encoder_spec(settings))
    except ModelError as exc:  # a configured speaker model that cannot load: said when it loads
        click.echo(f"models.speaker: {exc}", err=True)
        return
    if export is None:
        return
    weights, cache_dir = export
    _export_once(
        settings.models.speaker, ge2e.onnx_file(weights, cache_dir), lambda: ge2e.prepare_onnx(weights, cache_dir)
    )


def _export_once(name: str, path: Path, export: Callable[[], object]) -> None:
    """Make the export at `path` with `export` unless it is there, saying so; a failure is said, not raised."""
    if not path.is_file():
        click.echo(f"{name}: exporting it for onnxruntime (once)", err=True)
    try:
        export()
    except Exception as exc:  # noqa: BLE001 - the model loads with torch when it finds no export
        click.echo(f"{name}: cannot export it for onnxruntime ({exc}); it will load with torch", err=True)


@models.command("status")
@click.option("--verify", is_flag=True, help="Recompute checksums (slow for large files).")
@click.pass_context
def models_status(ctx: click.Context, verify: bool) -> None:
    """Say which models are present, missing or corrupt."""
    from . import models as registry

    click.echo(registry.format_status(registry.status(_settings(ctx), verify=verify)))


@main.group(invoke_without_command=True)
@click.pass_context
def speakers(ctx: click.Context) -> None:
    """List the voices the memory knows: how much each has said, the seconds of recording enrolled
    for it, and how surely its recent speech matched it; enroll, name and merge them."""
    if ctx.invoked_subcommand is not None:
        return
    with _service(ctx) as service:
        _print_speakers(service.speakers(), _settings(ctx).diarization.match_threshold)
        alike = service.merge_suggestions()
        names = service.name_suggestions()
    for m in alike:
        click.echo(
            f"perhaps one voice: {m.keep.id} {m.keep.name!r} and {m.other.id} {m.other.name!r} "
            f"(cosine {m.cosine:.2f}); if so: assistant speakers merge {m.keep.id} {m.other.id}"
        )
    for n in names:
        times = f", {n.times} times" if n.times > 1 else ""
        click.echo(
            f"perhaps {n.name}: {n.speaker.id} {n.speaker.name!r} said \u201c{n.example.text}\u201d{times}; "
            f"if so: assistant speakers name {n.speaker.id} {shlex.quote(n.name)}"
        )


def _print_speakers(found: list[Speaker], match_threshold: float) -> None:
    if not found:
        click.echo("no speakers yet")
        return
    click.echo(f"{'id':>4}  {'name':<24} {'utterances':>10} {'speech':>9}  {'voice':<16} match")
    for sp in found:
        if sp.enrolled:
            # Voices enrolled before the seconds were kept, or imported from an older export, show none.
            voice = f"enrolled {_minutes(sp.enrolled_seconds)}" if sp.enrolled_seconds else "enrolled"
        else:
            voice = "learned" if sp.voice is not None else "-"
        match = f"{sp.match_cosine:.2f} of {sp.match_utterances}" if sp.match_cosine is not None else "-"
        click.echo(
            f"{sp.id:>4}  {sp.name:<24} {sp.utterances:>10} {_minutes(sp.speech_seconds):>9}  {voice:<16} {match}"
        )
    if any(sp.match_cosine is not None for sp in found):
        click.echo(
            "match: how surely recent speech matched the voice, the median cosine of its last (up to 20) "
            f"utterances to it; 1.00 is the same voice, under {match_threshold:.2f} (diarization.match_threshold) "
            "no match"
        )


def _minutes(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"


@speakers.command("name")
@click.argument("speaker")
@click.argument("name")
@click.pass_context
def speakers_name(ctx: click.Context, speaker: str, name: str) -> None:
    """Give SPEAKER (an id or a name) the name NAME; past utterances and the memory are relabelled."""
    with _service(ctx) as service:
        sp = service.name_speaker(speaker, name)
    click.echo(f"speaker {sp.id} is now {sp.name!r} ({sp.utterances} utterances relabelled)")


@speakers.command("merge")
@click.argument("keep")
@click.argument("other")
@click.pass_context
def speakers_merge(ctx: click.Context, keep: str, other: str) -> None:
    """OTHER is the same voice as KEEP: its utterances, voice and mentions become KEEP's."""
    with _service(ctx) as service:
        sp = service.merge_speakers(keep, other)
    click.echo(f"merged into speaker {sp.id} {sp.name!r}: {sp.utterances} utterances")


@speakers.command("reassign")
@click.argument("to")
@click.option(
    "--utterance", "utterance_ids", type=click.IntRange(min=1), multiple=True, help="An utterance id (repeat)."
)
@click.option("--since", default=None, help="Utterances said from this time on (ISO-8601 or epoch seconds).")
@click.option("--until", default=None, help="Utterances said before this time.")
@click.option("--from", "from_speaker", default=None, help="Only those now labelled with this speaker (name or id).")
@click.option("--new", "new_speaker", is_flag=True, help="TO is a new speaker's name (a voice not heard apart yet).")
@click.pass_context
def speakers_reassign(
    ctx: click.Context,
    to: str,
    utterance_ids: tuple[int, ...],
    since: str | None,
    until: str | None,
    from_speaker: str | None,
    new_speaker: bool,
) -> None:
    """TO said these utterances: by --utterance id, or by --since/--until and/or --from; the
    transcript, the memory built on them and both voices are corrected."""
    zone = _settings(ctx).zone
    window = {"since": _when(since, "--since", zone), "until": _when(until, "--until", zone), "speaker": from_speaker}
    if not utterance_ids and all(v is None for v in window.values()):
        raise InputError("say which utterances: --utterance ID, or --since/--until and/or --from SPEAKER")
    with _service(ctx) as service:
        done = service.reassign(to, utterance_ids, new_speaker=new_speaker, **window)
    sp = done.speaker
    click.echo(f"{len(done.moved)} utterance(s) now said by speaker {sp.id} {sp.name!r}")
    if done.removed_speakers:
        click.echo(f"removed speaker(s) left with nothing: {', '.join(map(str, done.removed_speakers))}")


@speakers.command("lines")
@click.argument("speaker")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 500), help="How many, newest last.")
@click.pass_context
def speakers_lines(ctx: click.Context, speaker: str, limit: int) -> None:
    """Who is SPEAKER? Their last utterances, with the ids `reassign --utterance` takes."""
    zone = _settings(ctx).zone
    with _service(ctx) as service:
        found = service.speaker_lines(speaker, limit)
    if not found:
        click.echo(f"speaker {speaker} has said nothing that is kept")
    for u in found:
        click.echo(f"{u.id:>7}  {format_time(u.time, zone)}  {u.text}")


@speakers.command("enroll")
@click.argument("name")
@click.argument("recording", type=click.Path(path_type=Path))
@click.pass_context
def speakers_enroll(ctx: click.Context, name: str, recording: Path) -> None:
    """Teach the memory NAME's voice from RECORDING (that person alone: at least 5 seconds of speech,
    about 20 is best). NAME may be an existing speaker's name or id, whose voice it adds to. A running
    daemon enrolls it, and recognises the voice at once."""
    from .daemon.client import DaemonClient

    settings = _settings(ctx)
    client = DaemonClient.connect(settings)
    if client is not None:
        with client:
            sp = client.enroll(name, recording)
    else:
        from .listening import enroll, read_recording
        from .speech.diarize import diarizer_from_settings

        samples = read_recording(recording)
        with _open(ctx) as mem:
            sp = enroll(mem, diarizer_from_settings(settings), name, samples)
    click.echo(f"enrolled {sp.name!r} (speaker {sp.id}): {_minutes(sp.enrolled_seconds)} of recording in all")


def _when(value: str | None, option: str, zone: tzinfo) -> float | None:
    """A time given on the command line (ISO-8601 or epoch seconds), refused naming its option.

    Without an offset it is read in `zone`, the configured time zone, as every time is shown."""
    from .zones import parse_when

    if value is None:
        return None
    try:
        return parse_when(value, zone)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


@main.command("export")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["json", "markdown", "jsonl"]), default="json", show_default=True)
@click.option("--since", default=None, help="Only speech from this time on (ISO-8601 or epoch seconds).")
@click.option("--until", default=None, help="Only speech before this time.")
@click.option("--speaker", default=None, help="Only this speaker's speech (name or id).")
@click.pass_context
def export_cmd(
    ctx: click.Context, out: Path, fmt: str, since: str | None, until: str | None, speaker: str | None
) -> None:
    """Write the memory to OUT: json (complete, re-importable), markdown (to read) or jsonl (the transcript)."""
    from .exports import write_atomically

    zone = _settings(ctx).zone
    selection = Selection(_when(since, "--since", zone), _when(until, "--until", zone), speaker)
    with _service(ctx) as memory:
        size = write_atomically(out, memory.export(fmt, selection))
    click.echo(f"wrote {out} ({size:,} bytes, {fmt})")


@main.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def import_cmd(ctx: click.Context, file: Path) -> None:
    """Restore a JSON export into an empty memory, or merge it into this one without duplicates."""
    with _service(ctx) as memory:
        r = memory.import_file(file)
    click.echo(
        f"{r.mode}: {r.utterances} utterances and {r.nodes} nodes added, "
        f"{r.duplicates} known already ({r.seconds:.1f} s)"
    )


@main.command()
@click.option("--speaker", default=None, help="Everything this speaker said, and their voice.")
@click.option("--since", default=None, help="Speech from this time on (ISO-8601 or epoch seconds).")
@click.option("--until", default=None, help="Speech before this time.")
@click.option("--text", default=None, help="Every utterance, and every memory, that contains these words.")
@click.option("--everything", is_flag=True, help="The whole memory.")
@click.option("--dry-run", is_flag=True, help="Only show what would go.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def forget(
    ctx: click.Context,
    speaker: str | None,
    since: str | None,
    until: str | None,
    text: str | None,
    everything: bool,
    dry_run: bool,
    yes: bool,
) -> None:
    """Forget speech and what the memory built on it; afterwards the words are nowhere on disk.

    Filters combine: --speaker Sam --since 2026-11-01 forgets what Sam said since then.
    """
    zone = _settings(ctx).zone
    what = ForgetFilter(speaker, _when(since, "--since", zone), _when(until, "--until", zone), text, everything).check()
    with _service(ctx) as memory:
        plan = memory.forget(what, dry_run=True)
        _show_plan(plan)
        if plan.empty or dry_run or not (yes or click.confirm("Forget this?", default=False)):
            return
        done = memory.forget(what, dry_run=False)
    size = f"; database now {done.database_bytes:,} bytes" if done.database_bytes is not None else ""
    click.echo(f"forgotten: {done.utterances} utterances, {done.nodes} memory nodes{size}")


def _show_plan(plan: ForgetOutcome) -> None:
    if plan.empty:
        click.echo("nothing matches; nothing to forget")
        return
    click.echo(
        f"would forget {plan.utterances} utterances and {plan.nodes} memory nodes"
        + (f", re-filing the rest of {plan.refiled_events} events" if plan.refiled_events else "")
        + (f", and {plan.speakers} voice(s)" if plan.speakers else "")
    )
    for example in plan.examples:
        click.echo("  " + textwrap.shorten(example, 98))


main.add_command(service)


@main.command()
@click.option(
    "--source",
    default=None,
    help="Listen to this audio file (played at real-time pace) instead of the microphone; '-' reads PCM on stdin.",
)
@click.pass_context
def daemon(ctx: click.Context, source: str | None) -> None:
    """Run the always-on service in the foreground: listen, remember, and serve the local API."""
    from .daemon import systemd
    from .daemon.server import serve

    systemd.journal_logging(ctx.obj["log_level"])
    code = 0
    try:
        serve(ctx.obj["config"], source=source)
    except AssistantError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        code = exc.exit_code
    except Exception:
        logging.getLogger("assistant.daemon").exception("the daemon failed")
        code = 1
    finally:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        # The database is closed and the queue spooled by now. Interpreter teardown would only
        # destroy the native thread pools of whisper and llama.cpp under threads that may still
        # be inside them (a segment cut short by the stop timeout), which aborts the process.
        os._exit(code)


@main.command()
@click.pass_context
def status(ctx: click.Context) -> None:
    """What the daemon is doing: listening or paused, lag, speakers, memory budget, models."""
    from .daemon.client import DaemonClient

    with DaemonClient.require(_settings(ctx)) as client:
        s = client.status()
    m = s.memory
    click.echo(f"{click.style(s.state, bold=True)} on {s.source} (up {s.uptime_seconds:.0f} s)")
    if s.source_problem:
        click.echo(s.source_problem)
    click.echo(
        f"transcription lag {s.lag_seconds:.1f} s; waiting: {s.queued_segments} segments in memory, "
        f"{s.spooled_segments} on disk ({s.queued_seconds:.1f} s of speech)"
    )
    click.echo(
        f"memory: {m.tokens:,} / {m.token_budget:,} tokens, {m.scenes} scenes, {m.events} events, "
        f"{m.amus} units; {m.utterances} utterances, {m.pending_blocks} pending"
    )
    click.echo("speakers: " + (", ".join(f"{sp.name} ({sp.utterances})" for sp in s.speakers) or "none yet"))
    click.echo("models: " + ", ".join(f"{k} {v}" for k, v in s.models.items()))
    click.echo("devices: " + ", ".join(f"{k} {v}" for k, v in s.devices.items()))


def _listening(ctx: click.Context, paused: bool) -> None:
    with _service(ctx) as memory:
        state = (memory.pause() if paused else memory.resume()).state
    if state == NOT_RUNNING:
        # Remembered for the daemon's next start.
        click.echo(f"no daemon is running; it will start {'paused' if paused else 'listening'}")
    else:
        click.echo(f"the daemon is {state}")


@main.command()
@click.pass_context
def pause(ctx: click.Context) -> None:
    """Stop listening until `assistant resume` (kept across restarts)."""
    _listening(ctx, paused=True)


@main.command()
@click.pass_context
def resume(ctx: click.Context) -> None:
    """Listen again after `assistant pause`."""
    _listening(ctx, paused=False)


@main.command()
@click.pass_context
def paths(ctx: click.Context) -> None:
    """Print where configuration, data and models live."""
    s = _settings(ctx)
    click.echo(f"user config: {locations.user_config_file()}")
    click.echo(f"database:    {s.database_path}")
    click.echo(f"models:      {s.models_dir}")


@main.command("mcp")
@click.option(
    "--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 (needs daemon.tcp.token) instead of stdio."
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help="The HTTP port (with --http; default 8766). Clients connect to http://127.0.0.1:PORT/mcp.",
)
@click.pass_context
def mcp_cmd(ctx: click.Context, http: bool, port: int | None) -> None:
    """Serve the running daemon's memory to MCP clients (Claude Desktop and others): ask, search,
    transcript, speakers, forget.

    On stdio by default: the client starts this command itself. The daemon must be running; until
    it is, each tool answers how to start it.
    """
    if port is not None and not http:
        raise click.UsageError("--port is for --http")
    # Imported here: the MCP SDK is only for this command, and `assistant --help` stays quick.
    from .mcp_server.transports import DEFAULT_PORT, serve

    serve(_settings(ctx), http=http, port=port or DEFAULT_PORT)


@main.command()
@click.pass_context
def tui(ctx: click.Context) -> None:
    """A terminal window on the running daemon: chat, live transcript, memory, speakers."""
    from .tui.app import run

    run(ctx.obj["config"])


if __name__ == "__main__":  # pragma: no cover
    main()
