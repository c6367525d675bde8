"""`Daemon`: one process that owns the audio source, the models and the database.

Threads, and what flows between them (one way):

    capture ──segments──▶ SegmentQueue (memory, then disk) ──▶ transcribe ──▶ writer ──▶ events
                                                                                 ▲
    distill ◀──pending blocks── writer ──mount────────────────────────────────────┘
    API requests ──short calls──▶ writer;  answers stream from the LLM outside the writer

The writer is the only thread that touches the memory. An utterance is *acknowledged* (sent
to live-transcript subscribers) only after its transaction commits, so anything a client
has seen survives a crash. In `memory.distill.mode: llm` the LLM is shared by answers and
distillation under one lock; distillation only ever waits for it, so questions never stall what
is being heard (the default, extractive, distils without it).

Push-to-talk (`push_to_talk.PushToTalk`: a spoken question, or a voice to enroll), the quiet hours
(`quiet_hours.QuietHours`) and config reload (`reload.SettingsReload`) are parts the daemon holds;
the capture thread asks the first two about every block.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..audio.base import AudioSource
from ..audio.sources import open_source
from ..audio.vad import speech_segments
from ..config import Settings
from ..errors import AssistantError, LLMUnreachable
from ..listening import Heard, Listener, enroll, read_recording
from ..memory import archive
from ..memory.api import Memory, TreeNode
from ..memory.forget import ForgetPlan, ForgetReport
from ..records import (
    Answer,
    AudioBlock,
    Digest,
    ForgetFilter,
    HeardLine,
    MergeSuggestion,
    NameSuggestion,
    Reassignment,
    Relabelled,
    Retrieval,
    Speaker,
    SpeechSegment,
    Status,
    Transcript,
    Utterance,
)
from .llm_health import LLMHealth
from .push_to_talk import ENROLLMENT, QUESTION, PushToTalk
from .quiet_hours import QuietHours
from .reload import needs_restart
from .spool import Queued, SegmentQueue
from .writer import Writer

log = logging.getLogger(__name__)

# How long an idle distiller sleeps before looking at the pending queue again (it is also woken
# whenever a block may have been cut).
DISTILL_POLL_SECONDS = 5.0
# How often retention (memory.retention_days) is applied.
EXPIRY_SECONDS = 3600.0
# A microphone that fails to open is retried after this long (the source itself retries drops).
SOURCE_RETRY_SECONDS = 5.0


class Daemon:
    def __init__(self, settings: Settings, *, source: str | None = None) -> None:
        self.settings = settings
        self.source_spec = source if source is not None else settings.daemon.source
        self.started = time.time()
        self.state = "starting"
        # Set when a stop begins, before the API closes: open streams end on it.
        self.closing = False
        self.acknowledged = 0
        self._listeners: list[Callable[[HeardLine | Relabelled], None]] = []
        self._stop = threading.Event()
        self._wake_distiller = threading.Event()
        self._llm_lock = threading.Lock()
        self._stt_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._heard_until = 0.0
        self._last_heard = time.monotonic()
        self._transcribing = False
        self._current: Queued | None = None
        # Set on the writer thread when a stop gives up on what is still being transcribed: from then
        # on nothing is filed, so a segment put back for the next start cannot also be stored now.
        self._sealed = False
        self._source: AudioSource | None = None
        self._source_description = "microphone" if self.source_spec is None else str(self.source_spec)
        self.quiet_hours = QuietHours(settings.daemon.quiet_hours)
        self.push_to_talk = PushToTalk(
            microphone=self.source_spec is None, transcribe=self._speech_to_text, problem=self._source_problem
        )
        self._paused_flag = settings.paused_flag
        self.paused = self._paused_flag.exists()

        self.writer = Writer()
        self.queue = SegmentQueue(settings.data_dir / "spool", settings.daemon.queue_segments)
        self.memory: Memory
        self.listener: Listener
        self.llm_health: LLMHealth

    # --- life cycle --------------------------------------------------------------------------

    def load(self) -> None:
        """Open the memory and load every model, so the first question or voice costs no loading."""
        self.writer.start()
        self.writer.call(self._open)
        log.info("models loaded; listening on %s", self._source_description)

    def _open(self) -> None:
        self.memory = Memory(self.settings)
        self.memory.load_embedder()
        self.memory.engine.inline_distill = False
        self.listener = Listener.from_settings(self.memory, self.settings)
        self.listener.warm_up()
        self.memory.engine.distiller  # noqa: B018 - loads spaCy (and the LLM in llm mode) now, not on first speech
        self.llm_health = LLMHealth(self.memory.llm, self.settings.models.llm)

    def start(self) -> None:
        for name, target in (("capture", self._capture), ("transcribe", self._transcribe), ("distill", self._distill)):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        if self.state == "starting":
            self.state = "paused" if self.paused else "listening"

    def stop(self) -> None:
        """Stop listening, file what can be filed within `daemon.stop_seconds`, spool the rest."""
        self.state = "stopping"
        self._stop.set()
        source = self._source
        if source is not None and self.source_spec is None:
            # A microphone waiting for its device to come back would hold the capture thread past
            # stop_seconds, and with it the speech the segmenter still holds open; its close may
            # come from another thread and ends that wait, so the segment is flushed and spooled.
            source.close()
        self._wake_distiller.set()
        self.queue.close()
        deadline = time.monotonic() + self.settings.daemon.stop_seconds
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        current = self.writer.call(self._seal) if self.writer.alive else self._seal()
        if current is not None:
            # Still being transcribed when time ran out: it goes back to the queue, then to disk.
            self.queue.requeue(current)
        spooled = self.queue.spool_all()
        if spooled:
            log.info("spooled %d untranscribed segment(s) for the next start", spooled)
        if hasattr(self, "memory"):
            # The sensing buffer and pending blocks are already in the database; this only closes it.
            self.writer.call(self.memory.close)
        self.writer.stop(timeout=5)

    def healthy(self) -> bool:
        """For the watchdog: the writer and the pipeline threads are alive and no call is wedged."""
        return (
            self.writer.alive
            and self.writer.stuck_for() < 120
            and all(t.is_alive() or t.name == "capture" for t in self._threads)
        )

    def subscribe(self, callback: Callable[[HeardLine | Relabelled], None]) -> Callable[[], None]:
        """Call `callback` (on the writer thread: it must not block) for each filed utterance, and
        for each group of utterances given to another speaker afterwards."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback)

    # --- the pipeline ------------------------------------------------------------------------

    def _conversation(self, blocks: Iterator[AudioBlock]) -> Iterator[AudioBlock]:
        """The source's blocks minus paused stretches and push-to-talk questions."""
        for block in blocks:
            if self._stop.is_set():
                return
            self._heard_until = block.start + block.duration
            if self.push_to_talk.take(block.samples):
                continue
            if self.paused or self.quiet_hours.now():
                continue
            yield block

    def _capture(self) -> None:
        while not self._stop.is_set():
            try:
                realtime = self.source_spec is not None and self.source_spec != "-"
                source = open_source(self.source_spec, self.settings.audio, realtime=realtime)
                self._source = source
                self._source_description = source.description
                with source:
                    for segment in speech_segments(self._conversation(source.blocks()), self.settings.vad):
                        self.queue.put(segment)
            except AssistantError as exc:
                log.error("audio source: %s", exc)
                self.state = "source failed"
                if self._stop.wait(SOURCE_RETRY_SECONDS):
                    return
                self.state = "paused" if self.paused else "listening"
                continue
            if not self._stop.is_set():
                # A file (or stdin) ends; a microphone only ends when asked to.
                log.info("the audio source ended")
                self.state = "source ended"
                self._wake_distiller.set()
            return

    def _transcribe(self) -> None:
        while True:
            item = self.queue.take(timeout=1.0)
            if item is None:
                if self._stop.is_set():
                    return
                continue
            if self._stop.is_set():
                # Taken just as the daemon stopped: it waits for the next start, untouched.
                self.queue.requeue(item)
                return
            self._transcribing, self._current = True, item
            try:
                transcripts = self._speech_to_text(item.segment)
                heard = self.writer.call(self._file, transcripts)
            except Exception:
                # One bad segment must not stop the daemon from hearing the next.
                log.exception("could not transcribe the segment at %.1f", item.segment.start)
                heard = []
            finally:
                self._transcribing = False
            if heard is None:
                # The stop ran out of time while this was transcribed: the next start hears it.
                self.queue.requeue(item)
                return
            self.queue.done(item)
            self._current = None
            if heard:
                self._last_heard = time.monotonic()
                self._wake_distiller.set()
            if self._stop.is_set():
                return

    def _speech_to_text(self, segment: SpeechSegment) -> list[Transcript]:
        # One transcription at a time: the conversation's segments and push-to-talk questions share the model.
        with self._stt_lock:
            return self.listener.transcribe(segment)

    def _seal(self) -> Queued | None:
        """(Writer thread.) File nothing more; the segment being transcribed, if any, is the stop's to keep."""
        self._sealed = True
        return self._current

    def _file(self, transcripts: list[Transcript]) -> list[Heard] | None:
        """(Writer thread.) Store the current segment's words; None once the stop has sealed the memory."""
        item = self._current
        if self._sealed or item is None:
            return None
        relabels: list[Relabelled] = []
        self.listener.on_relabel = relabels.append
        try:
            heard = self.listener.attribute(item.segment, transcripts)
        finally:
            self.listener.on_relabel = None
        # Filed: a stop from here on has nothing to put back.
        self._current = None
        for h in heard:
            self.acknowledged += 1
            u = h.utterance
            self._tell(HeardLine(u.id, h.speaker_id, u.speaker, u.text, u.time))
        for r in relabels:
            self._tell(Relabelled(r.utterance_ids, r.speaker_id, r.speaker))
        return heard

    def _tell(self, event: HeardLine | Relabelled) -> None:
        for callback in list(self._listeners):
            try:
                callback(event)
            except Exception:
                log.exception("a live-transcript subscriber failed")

    def _idle(self) -> bool:
        """Nothing heard is waiting to be transcribed or filed."""
        waiting = self.queue.state()
        return waiting.in_memory == 0 and waiting.on_disk == 0 and not self._transcribing

    def _distill(self) -> None:
        next_expiry = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= next_expiry:
                # Retention runs here, between distillations, on the writer like every change.
                expired = self.writer.call(self.memory.expire)
                if expired:
                    log.info("retention: %d utterance(s) past memory.retention_days removed", expired)
                next_expiry = time.monotonic() + EXPIRY_SECONDS
            self._wake_distiller.wait(DISTILL_POLL_SECONDS)
            self._wake_distiller.clear()
            self.llm_health.check()
            engine = self.memory.engine
            quiet = time.monotonic() - self._last_heard
            ended = self.state == "source ended" and self._idle()
            if quiet >= self.settings.daemon.idle_flush_seconds or ended:
                # The conversation is over: file what the sensing buffer holds.
                self.writer.call(engine.flush)
            while not self._stop.is_set():
                if engine.distiller.llm is not None and self.llm_health.problem is not None:
                    break  # the blocks wait in the database until the model can be reached again
                job = self.writer.call(engine.oldest_pending)
                if job is None:
                    break
                block, vectors = job
                try:
                    with self._llm_lock:
                        distilled = engine.distiller.distill(block, vectors)
                    self.writer.call(engine.file_distillation, distilled)
                except LLMUnreachable as exc:
                    self.llm_health.failed(exc)
                    break
                except Exception:
                    log.exception("could not distill block %d; it stays pending", block.id)
                    break

    # --- requests ----------------------------------------------------------------------------

    def status(self) -> Status:
        queue = self.queue.state()
        lag = max(0.0, self._heard_until - queue.oldest_start) if queue.oldest_start is not None else 0.0
        stats = self.writer.call(self.memory.stats)
        found = tuple(self.writer.call(self.memory.speakers))
        s = self.settings
        transcriber = self.listener.transcriber
        return Status(
            state=self._shown_state(),
            paused=self.paused,
            idle=self._idle(),
            source=self._source_description,
            source_problem=self._source_problem(),
            lag_seconds=round(lag, 2),
            queued_segments=queue.in_memory,
            spooled_segments=queue.on_disk,
            queued_seconds=round(queue.seconds, 2),
            acknowledged=self.acknowledged,
            memory=stats,
            speakers=found,
            models={"llm": self.llm_health.model}
            | {role: str(getattr(s.models, role)) for role in ("embedder", "stt", "speaker")},
            devices={
                "stt": f"{transcriber.device} {transcriber.compute_type}",
                "llm": self.llm_health.device,
            },
            uptime_seconds=round(time.time() - self.started, 1),
            push_to_talk=self.push_to_talk.recording,
        )

    def _shown_state(self) -> str:
        if self.state in ("starting", "stopping"):
            return self.state
        if self.paused:
            return "paused"
        if self.quiet_hours.now() and self.state == "listening":
            return "quiet hours"
        if self.state == "listening" and self._source_problem():
            return "source lost"
        return self.state

    def _source_problem(self) -> str | None:
        source = self._source
        return source.problem if source is not None else None

    def ask(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> Iterator[str | Answer]:
        """Retrieve now, on the writer; the answer then streams from the returned iterator.

        Retrieval happens before the first item is asked for, so a bad question or filter (an
        unknown speaker, since not before until) raises here, before a response has begun.
        `since`/`until` (seconds since the epoch) and `speaker` (a name or id) limit the recall.
        """
        prepared = self.writer.call(self.memory.prepare, question, since=since, until=until, speaker=speaker)

        def generate() -> Iterator[str | Answer]:
            if prepared.prompt is None:
                # Nothing relevant: the answer needs no LLM, so it must not queue behind those that do.
                yield from self.memory.answer_stream(prepared)
                return
            with self._llm_lock:
                yield from self.memory.answer_stream(prepared)

        return generate()

    def pause(self) -> None:
        self.paused = True
        self._paused_flag.touch()
        if self.state == "listening":
            self.state = "paused"

    def resume(self) -> None:
        self.paused = False
        self._paused_flag.unlink(missing_ok=True)
        if self.state == "paused":
            self.state = "listening"

    def speakers(self) -> list[Speaker]:
        return self.writer.call(self.memory.speakers)

    def speaker_lines(self, key: str | int, limit: int) -> list[Utterance]:
        return self.writer.call(self.memory.speaker_lines, key, limit)

    def transcript(
        self,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        limit: int = 200,
    ) -> list[Utterance]:
        return self.writer.call(self.memory.transcript, since, until, speaker, limit)

    def recent_heard(self, limit: int) -> list[HeardLine]:
        """The newest `limit` stored utterances as the live transcript sends them (a client catching up)."""
        recent = self.writer.call(self.memory.recent_utterances, limit)
        return [HeardLine(u.id, sid, u.speaker, u.text, u.time) for sid, u in recent]

    def merge_suggestions(self) -> list[MergeSuggestion]:
        return self.writer.call(self.memory.merge_suggestions)

    def name_suggestions(self) -> list[NameSuggestion]:
        return self.writer.call(self.memory.name_suggestions)

    def rename_speaker(self, key: str | int, name: str) -> Speaker:
        return self.writer.call(self._relabel, lambda: self.memory.rename_speaker(key, name))

    def merge_speakers(self, keep: str | int, other: str | int) -> Speaker:
        return self.writer.call(self._relabel, lambda: self.memory.merge_speakers(keep, other))

    def reassign(
        self,
        to: str | int,
        utterance_ids: list[int] | None = None,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        new_speaker: bool = False,
    ) -> Reassignment:
        """Give utterances (by id, or a time range and/or their current speaker) to `to` (a new
        speaker of that name with `new_speaker`); live transcript subscribers are told, as for the
        re-clustering's own moves."""

        def change() -> Reassignment:
            ids = self.memory.select_utterances(utterance_ids or (), since, until, speaker)
            result = self.memory.reassign(ids, to, new_speaker=new_speaker)
            self.listener.pin(ids)
            self.listener.reload_voices()
            if result.moved:
                self._tell(Relabelled(result.moved, result.speaker.id, result.speaker.name))
            return result

        return self.writer.call(change)

    # --- push-to-talk: a spoken question, or a voice to enroll ----------------------------------

    def start_question(self) -> None:
        self.push_to_talk.start(QUESTION, limit_seconds=self.settings.daemon.max_question_seconds)

    def start_enrollment(self, name: str) -> None:
        """Record `name`'s voice from the microphone; the name is checked now, before they speak."""
        checked = self.writer.call(self.memory.enrollment_name, name)
        self.push_to_talk.start(ENROLLMENT, limit_seconds=self.settings.daemon.enroll_seconds, name=checked)

    def finish_enrollment(self) -> Speaker:
        """Stop recording the voice and enroll it under the name it was started with."""
        recorded = self.push_to_talk.finish(ENROLLMENT)
        assert recorded.name is not None  # start_enrollment always names it
        return self.enroll(recorded.name, recorded.samples)

    def enroll_file(self, name: str, path: Path) -> Speaker:
        """Enroll a voice from a recording on this machine (that person alone)."""
        return self.enroll(name, read_recording(path))

    def enroll(self, name: str, samples: np.ndarray) -> Speaker:
        """Enroll `name`'s voice from 16 kHz float32 `samples`, and listen for it from now on."""

        def learn() -> Speaker:
            try:
                return enroll(self.memory, self.listener.diarizer, name, samples)
            finally:
                # As after a rename: the diarizer matches voices by store id, and Whisper gets the
                # names; a failed enrollment must not leave the diarizer a voice the store lacks.
                self.listener.reload_voices()

        return self.writer.call(learn)

    def _relabel(self, change: Callable[[], Speaker]) -> Speaker:
        speaker = change()
        # The diarizer matches voices by store id; a merge removed one, a rename changed a label.
        self.listener.reload_voices()
        return speaker

    def search(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> Retrieval:
        return self.writer.call(self.memory.search, question, since=since, until=until, speaker=speaker)

    def tree(self) -> list[TreeNode]:
        return self.writer.call(self.memory.tree)

    def delete_node(self, node_id: int) -> list[int]:
        return self.writer.call(self.memory.delete, node_id)

    def digest(self, day: str | None = None) -> Digest:
        """A day's digest. The store is read on the writer, before and after the LLM confirms the
        day's candidate commitments under the LLM's lock, as an answer is generated: the writer
        never waits for the LLM, and what was forgotten meanwhile is left out."""
        reading = self.writer.call(self.memory.read_day, day)
        if reading.candidates:
            with self._llm_lock:
                verdicts = self.memory.confirm_commitments(reading)
        else:
            verdicts = ()
        return self.writer.call(self.memory.finish_digest, reading, verdicts)

    # --- the user's data ---------------------------------------------------------------------

    def export(self, fmt: str, selection: archive.Selection) -> Iterator[str]:
        """The export's text; the memory is read on the writer, the text written out by the caller."""

        def read() -> dict[str, Any]:
            doc = self.memory.export_document(fmt, selection)
            self.memory.audit_export(fmt, doc)
            return doc

        return archive.FORMATS[fmt](self.writer.call(read))

    def import_file(self, path: Path) -> archive.ImportReport:
        report = self.writer.call(self.memory.import_file, path)
        self.writer.call(self.listener.reload_voices)
        self._wake_distiller.set()
        return report

    def forget_plan(self, f: ForgetFilter) -> ForgetPlan:
        return self.writer.call(self.memory.forget_plan, f)

    def forget(self, f: ForgetFilter) -> ForgetReport:
        def run() -> ForgetReport:
            report = self.memory.forget(f)
            self.listener.reload_voices()  # a forgotten speaker's voice is not matched again
            return report

        report = self.writer.call(run)
        # Untranscribed audio in the range (or all of it) goes too: it would bring the words back.
        if f.everything or (f.speaker is None and f.text is None):
            self.queue.discard(f.since, f.until)
        self._wake_distiller.set()
        return report

    # --- configuration -----------------------------------------------------------------------

    def reload(self, settings: Settings) -> list[str]:
        """Apply a re-read configuration; returns the changes that need a restart to take effect."""
        old = self.settings
        pending = needs_restart(old, settings)

        def apply_to_memory() -> None:
            # On the writer: it is the only thread that touches the memory.
            self.memory.settings = settings
            self.memory.engine.options = settings.memory
            self.listener.transcriber.options = settings.stt
            self.listener.diarizer.options = settings.diarization

        self.writer.call(apply_to_memory)
        self.quiet_hours.set(settings.daemon.quiet_hours)
        # The sockets stay bound where they are, so the settings keep saying where that is.
        bound = replace(settings.daemon, socket=old.daemon.socket, tcp=old.daemon.tcp)
        self.settings = replace(settings, daemon=bound)
        return pending
