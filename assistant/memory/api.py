"""`Memory`: the small surface the CLI, the daemon and the benchmarks all use.

    memory = Memory.from_config()
    memory.add("Sam", "The Lisbon trip moves to May.", time=...)
    answer = memory.ask("When is the Lisbon trip?")

Models load lazily and once: the tokenizer when the memory opens, the embedder on the first
sentence to encode (a new memory needs it to open, for its vectors' size), the LLM on the first
distillation (llm mode) or question.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings, load_settings
from ..embed import LazyEmbedder, export_dir
from ..entities import make_extractor
from ..errors import InputError
from ..exports import write_atomically
from ..llm import ChatModel, load_llm, load_tokenizer
from ..models import resolve
from ..records import (
    Answer,
    Digest,
    Evidence,
    Level,
    MemoryStats,
    NameSuggestion,
    Node,
    Reassignment,
    RecalledLine,
    RecallFilter,
    Retrieval,
    Speaker,
    Utterance,
)
from ..store.store import Store
from . import archive, digest, forget, introductions, speakers
from .answer import DONT_KNOW, Prompt, Reply, build_prompt, cited_evidence, respond
from .budget import enforce_budget
from .commitments import Judge, LLMJudge, Verdict
from .context import Candidate, adds_words, build_context
from .distill import Distiller
from .engine import ProStream, StepReport
from .mentions import own_and_addressed, speaks_of
from .question import QuestionReading, possessed, read_question
from .recall import recall
from .relevance import Nearness, relevance, word_weights
from .supersede import is_statement
from .words import content_stems, stem


@dataclass(frozen=True)
class IngestReport:
    utterances: int
    duplicates: int
    blocks: int
    seconds: float


@dataclass(frozen=True)
class _Scored:
    """Each recalled line's relevance (by utterance id), and the question's word weights it was read with."""

    lines: dict[int, float]
    weights: dict[str, float]

    @property
    def best(self) -> float:
        return max(self.lines.values(), default=0.0)


@dataclass(frozen=True)
class PreparedQuestion:
    """A question retrieved and framed, ready for the LLM; `prompt` None when the memory has nothing on it."""

    retrieval: Retrieval
    prompt: Prompt | None
    retrieval_ms: float
    # How near the recalled lines come (`memory.relevance`): `prompt` is None when it is not
    # `answerable` (`answer.min_relevance`, `answer.min_person_share`).
    nearness: Nearness


@dataclass(frozen=True)
class TreeNode:
    node: Node
    utility: float
    children: tuple[TreeNode, ...]


def _strongest(lines: Sequence[RecalledLine]) -> float:
    """The fused score the context's floor is a share of: the best line that states something.

    A line that asks ("When is the finance review again?") repeats the question's words, so it
    often ranks first, and it states no value: a floor set by it left out the lines that answer
    (`answer.min_score_share`, whose figures are in config/default.yaml). It still ranks, and it
    is quoted if it passes. With no line that states, the best line of all."""
    best = lines[0].score if lines else 0.0
    return next((r.score for r in lines if is_statement(r.evidence.text)), best)


class Memory:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        opts = settings.memory
        recorded = Store.recorded_embedder(settings.database_path)
        self._embedder = LazyEmbedder(
            resolve(settings, "embedder").source,
            settings.embedder.device,
            settings.embedder.threads,
            dim=recorded[1] if recorded and recorded[0] == settings.models.embedder else None,
            cache_dir=export_dir(settings.models_dir),
        )
        self._llm_source = resolve(settings, "llm").source
        self.tokenizer = load_tokenizer(self._llm_source)
        self.store = Store(settings.database_path, embedder=settings.models.embedder, dim=self._embedder.dim)
        self.engine = ProStream(
            self.store, opts, embedder=self._embedder, tokenizer=self.tokenizer, distiller=self._make_distiller
        )
        # Confirms a day's candidate commitments; the LLM loads only when a batch is not cached.
        self.commitment_judge: Judge = LLMJudge(self._llm_source, lambda: self.llm)

    @classmethod
    def from_config(cls, config_file: str | Path | None = None, **overrides: object) -> Memory:
        return cls(load_settings(config_file, overrides=overrides or None))

    def load_embedder(self) -> None:
        """Load the sentence embedder now, not on the first sentence (a daemon, before it listens)."""
        self._embedder.load()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- models ------------------------------------------------------------------------------

    @property
    def llm(self) -> ChatModel:
        return load_llm(self._llm_source, self.settings.llm)

    def _make_distiller(self) -> Distiller:
        s, opts = self.settings, self.settings.memory
        llm = None
        if opts.distill.mode == "llm":
            distill = s.models.distill_llm
            llm = load_llm(resolve(s, "distill_llm", distill).source if distill else self._llm_source, s.llm)
        extractor = make_extractor(
            opts.entities.backend,
            spacy_model=resolve(s, "entities").source,
            gliner_model=opts.entities.gliner_model,
            labels=opts.entities.labels,
            threshold=opts.entities.gliner_threshold,
        )
        return Distiller(opts.distill, extractor=extractor, tokenizer=self.tokenizer, llm=llm)

    # --- writing -----------------------------------------------------------------------------

    def add(self, speaker: str, text: str, time: float | None = None, *, distill: bool = True) -> StepReport:
        """Remember one utterance. `time` defaults to now (seconds since the epoch)."""
        return self.engine.ingest(Utterance(speaker, text, _time.time() if time is None else time), distill=distill)

    def add_many(
        self, utterances: Iterable[Utterance], *, flush: bool = True, progress: Callable[[int], None] | None = None
    ) -> IngestReport:
        """Ingest a whole conversation in one transaction: it lands whole or not at all."""
        started = _time.perf_counter()
        count = dup = blocks = 0
        with self.store.atomic():
            for i, u in enumerate(utterances, start=1):
                report = self.engine.ingest(u)
                count += len(report.archived)
                dup += report.duplicates
                blocks += report.blocks_mounted
                if progress:
                    progress(i)
            if flush:
                self.engine.flush()
                blocks += self.engine.distill_pending()[0]
            self.store.audit("ingest", {"utterances": count, "duplicates": dup})
        return IngestReport(count, dup, blocks, _time.perf_counter() - started)

    def flush(self) -> int:
        """File what the sensing buffer holds: cut it into a block and distill what is pending."""
        self.engine.flush()
        return self.engine.distill_pending()[0]

    def delete(self, node_id: int) -> list[int]:
        """Remove a node with its subtree, then any parent left without children."""
        with self.store.atomic():
            if self.store.node(node_id) is None:
                raise InputError(f"no memory node with id {node_id}")
            removed = self.store.delete_node(node_id)
            removed += self.store.delete_childless()
            self.store.audit("delete_node", {"node": node_id, "removed": len(removed)})
        return removed

    # --- the user's data: export, import, forget -------------------------------------------

    def export_document(
        self,
        fmt: str,
        selection: archive.Selection | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> dict[str, Any]:
        """The memory (or the selected part) as an export document; `archive.FORMATS[fmt]` writes it.

        Reading is separate from writing so a daemon can read on its writer and stream elsewhere.
        """
        selection = selection or archive.Selection()
        if fmt not in archive.FORMATS:
            raise InputError(f"unknown export format {fmt!r}; choose json, markdown or jsonl")
        if selection.speaker is not None:
            speakers.find(self.store, selection.speaker)
        return archive.build_document(self.store, self.shaping_settings(), selection, progress)

    def audit_export(self, fmt: str, doc: dict[str, Any]) -> None:
        with self.store.atomic():
            self.store.audit("export", {"format": fmt, "utterances": len(doc["utterances"]), **doc["selection"]})

    def export(
        self,
        fmt: str,
        path: Path,
        selection: archive.Selection | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Write the memory (or the selected part) to `path` atomically; returns the bytes written."""
        doc = self.export_document(fmt, selection, progress)
        size = write_atomically(path, archive.FORMATS[fmt](doc))
        self.audit_export(fmt, doc)  # only an export that was written is one
        return size

    def shaping_settings(self) -> dict[str, object]:
        """The settings that shaped this memory, carried in an export so it can be read in context."""
        import dataclasses

        s = self.settings
        return {
            "embedder": s.models.embedder,
            "llm": s.models.llm,
            "time_zone": s.time_zone,
            "memory": dataclasses.asdict(s.memory),
        }

    def import_file(self, path: Path) -> archive.ImportReport:
        doc = archive.read_document(path)
        report = archive.import_document(
            self.store, doc, embed=self._embedder.encode, count_tokens=self.tokenizer.count
        )
        opts = self.settings.memory
        with self.store.atomic():
            enforce_budget(self.store, opts.budget, opts.utility, self.store.clock)
        self.engine.reload_buffer()
        return report

    def forget_plan(self, f: forget.ForgetFilter) -> forget.ForgetPlan:
        return forget.plan(self.store, f)

    def forget(self, f: forget.ForgetFilter, plan: forget.ForgetPlan | None = None) -> forget.ForgetReport:
        """Forget what `f` matches (see memory/forget.py); the speech left in touched events is re-filed."""
        report = forget.apply(self.store, f, plan if plan is not None else forget.plan(self.store, f))
        self.engine.reload_buffer()
        return report

    def expire(self) -> int:
        """Drop archived speech older than memory.retention_days (null keeps it forever)."""
        days = self.settings.memory.retention_days
        if days is None:
            return 0
        return forget.expire(self.store, days, _time.time())

    # --- a day's digest ----------------------------------------------------------------------

    def read_day(self, day: str | None = None, *, now: float | None = None) -> digest.DayReading:
        """The day (YYYY-MM-DD in `time_zone`; None: today, as of `now`) and the lines of it that may
        make a commitment: the part of a digest that reads the store, before the LLM."""
        return digest.read_day(self.store, digest.day_of(day, self.settings.zone, now))

    def confirm_commitments(self, reading: digest.DayReading) -> tuple[Verdict, ...]:
        """The LLM's verdict on each candidate (none asked when there is none). Touches no table."""
        return digest.confirm(reading, self.commitment_judge)

    def finish_digest(self, reading: digest.DayReading, verdicts: tuple[Verdict, ...]) -> Digest:
        """The digest from what is stored now: a commitment whose lines went meanwhile is left out."""
        return digest.assemble(self.store, reading, verdicts)

    def digest(self, day: str | None = None, *, now: float | None = None) -> Digest:
        """What a day's conversations were about and the commitments made, each citing its lines."""
        reading = self.read_day(day, now=now)
        return self.finish_digest(reading, self.confirm_commitments(reading))

    # --- voices: what the listening chain files --------------------------------------------

    def atomic(self) -> AbstractContextManager[None]:
        """One transaction around several changes (nested calls join it)."""
        return self.store.atomic()

    def new_speaker(self) -> int:
        """A speaker for a voice heard for the first time, labelled "Speaker N" until named; its id."""
        taken = {sp.name for sp in self.store.speakers()}
        n = len(taken) + 1
        while f"Speaker {n}" in taken:
            n += 1
        return self.store.speaker_id(f"Speaker {n}")

    def file_heard(
        self,
        speaker_id: int,
        text: str,
        time: float,
        *,
        voice: tuple[np.ndarray, float] | None = None,
        said_with: tuple[np.ndarray, float] | None = None,
    ) -> tuple[str, Utterance | None]:
        """One attributed piece of speech, in one transaction: the speaker's voice as the diarizer
        knows it now (centroid, seconds), the utterance, and the voice it was said in. Gives the
        speaker's name and the stored utterance, which carries its id; a repeat of one already
        stored gives None. Not distilled here.

        Runs for every utterance heard: it reads the speaker's name alone, not a whole `Speaker`
        (whose line count and match figure scan the speaker's lines)."""
        with self.store.atomic():
            if voice is not None:
                self.store.set_voice(speaker_id, voice[0], voice[1])
            name = self.store.speaker_name(speaker_id)
            if name is None:
                raise InputError(f"no speaker with id {speaker_id}")
            step = self.add(name, text, time, distill=False)
            said = step.archived[0] if step.archived else None
            if said is not None and said.id is not None and said_with is not None:
                self.store.set_utterance_voice(said.id, said_with[0], said_with[1])
        return name, said

    def give_voice(self, speaker_id: int, centroid: np.ndarray, seconds: float) -> None:
        """A voice for a speaker who has none yet (one the re-clustering just made)."""
        if self.store.speaker_voice(speaker_id) is None:
            self.store.set_voice(speaker_id, centroid, seconds)

    def enrollment_name(self, name: str) -> str:
        """The name (or id) a voice is enrolled under, checked before anything is recorded: an
        existing speaker's name or id adds to their voice, any other name makes a new speaker."""
        name = speakers.check_name(name)
        if name.isdigit():
            try:
                speakers.find(self.store, name)
            except InputError:
                raise InputError(
                    f"no speaker {name}: a name of digits alone is read as a speaker's id; give a name"
                ) from None
        return name

    def enroll(self, name: str, centroid: np.ndarray, seconds: float, recorded_seconds: float) -> Speaker:
        """A named voice from a recording of that person alone: an existing speaker of that name (or id)
        gains it, else one is created. `recorded_seconds` adds to the speaker's `enrolled_seconds`."""
        name = self.enrollment_name(name)
        with self.store.atomic():
            existing = self.store.find_speaker(int(name) if name.isdigit() else name)
            speaker_id = existing.id if existing else self.store.speaker_id(name)
            self.store.set_voice(speaker_id, centroid, seconds, enrolled=True)
            self.store.add_enrolled_seconds(speaker_id, recorded_seconds)
            self.store.audit("enroll_speaker", {"speaker": speaker_id, "seconds": round(recorded_seconds, 1)})
            return speakers.find(self.store, speaker_id)

    def find_speaker(self, key: str | int) -> Speaker | None:
        """The speaker with this id or name, or None."""
        return self.store.find_speaker(key)

    def speaker_names(self) -> list[str]:
        return self.store.speaker_names()

    def stored_utterances(self, ids: Iterable[int]) -> list[Utterance]:
        """Those of these utterances still stored (forgotten ones are not)."""
        return self.store.utterances(ids)

    # --- speakers ----------------------------------------------------------------------------

    def speakers(self) -> list[Speaker]:
        return self.store.speakers()

    def merge_suggestions(self) -> list[speakers.MergeSuggestion]:
        """Speakers whose voices sound alike (`diarization.suggest_merge_cosine`): perhaps one person."""
        return speakers.merge_suggestions(self.store.speakers(), self.settings.diarization.suggest_merge_cosine)

    def name_suggestions(self) -> list[NameSuggestion]:
        """Names unnamed voices gave themselves ("I'm Sam"), for the user to accept or not."""
        voices = [sp for sp in self.store.speakers() if speakers.is_automatic_name(sp.name)]
        lines = self.store.utterances_containing((sp.id for sp in voices), introductions.FRAGMENTS)
        return introductions.name_suggestions(voices, lines)

    def rename_speaker(self, key: str | int, name: str) -> Speaker:
        """Name a voice ("Speaker 2" is Alice): the transcript and the memory built on it are relabelled."""
        name = speakers.check_name(name)
        with self.store.atomic():
            sp = speakers.find(self.store, key)
            if sp.name == name:
                return sp
            if self.store.find_speaker(name) is not None:
                raise InputError(f"a speaker named {name!r} exists already; merge the two instead")
            self.store.rename_speaker(sp.id, name)
            self._relabelled(sp.id, sp.name, name)
            self.store.audit("rename_speaker", {"speaker": sp.id})
        return speakers.find(self.store, sp.id)

    def merge_speakers(self, keep: str | int, other: str | int) -> Speaker:
        """Two labels are one voice: `other`'s utterances, voice and mentions in the memory go to `keep`."""
        with self.store.atomic():
            a, b = speakers.find(self.store, keep), speakers.find(self.store, other)
            if a.id == b.id:
                raise InputError(f"cannot merge speaker {a.id} {a.name!r} with itself")
            voice, seconds = speakers.merged_voice(a, b)
            self.store.move_utterances(b.id, a.id)
            self.store.delete_speaker(b.id)
            if voice is not None:
                self.store.set_voice(a.id, voice, seconds, enrolled=a.enrolled or b.enrolled)
            self.store.add_enrolled_seconds(a.id, b.enrolled_seconds)
            self._relabelled(a.id, b.name, a.name)
            self.store.audit("merge_speakers", {"kept": a.id, "merged": b.id})
        return speakers.find(self.store, a.id)

    def utterances_between(
        self, since: float | None = None, until: float | None = None, speaker: str | int | None = None
    ) -> list[int]:
        """Ids of the utterances said in [since, until), by `speaker` (id or name) if given."""
        if since is None and until is None and speaker is None:
            raise InputError("give a time range or a speaker: reassigning everything at once is a merge")
        if since is not None and until is not None and until <= since:
            raise InputError("the range ends before it starts")
        who = speakers.find(self.store, speaker).id if speaker is not None else None
        return self.store.utterance_ids_between(since, until, who)

    def speaker_lines(self, key: str | int, limit: int = 20) -> list[Utterance]:
        """The last `limit` utterances of a speaker, oldest first: "who is this?" before naming a voice."""
        sp = speakers.find(self.store, key)
        return [u for _sid, u in self.store.last_utterances(limit, sp.id)]

    def transcript(
        self,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        limit: int = 200,
    ) -> list[Utterance]:
        """What was said in [since, until) (by `speaker`, a name or id, if given): the newest `limit`
        lines of it, oldest first."""
        if limit < 1:
            raise InputError(f"the limit must be at least 1, got {limit}")
        # The window is checked as recall checks it; the speaker is looked up once, for its id.
        window = self.recall_filter(since=since, until=until)
        who = speakers.find(self.store, speaker).id if speaker is not None else None
        return [u for _sid, u in self.store.last_utterances(limit, who, window.since, window.until)]

    def recent_utterances(self, limit: int) -> list[tuple[int, Utterance]]:
        """The newest `limit` utterances of anyone, oldest first, each with its speaker's id."""
        return self.store.last_utterances(limit)

    def select_utterances(
        self,
        ids: Iterable[int] = (),
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> list[int]:
        """The utterances a correction names: by id, plus those in a time range and/or of a speaker."""
        chosen = list(ids)
        if since is not None or until is not None or speaker is not None:
            chosen += self.utterances_between(since, until, speaker)
        if not chosen:
            raise InputError("no utterances match: nothing to reassign")
        return chosen

    def reassign(
        self,
        utterance_ids: Iterable[int],
        to: str | int,
        *,
        new_speaker: bool = False,
        why: str = "user",
        remove_empty: bool = True,
    ) -> Reassignment:
        """These utterances were said by `to` (a speaker's id or name): move them, with the memory built on them.

        With `new_speaker`, `to` is the name of someone not heard apart until now (one voice the
        chain took for another): the speaker is created in the same transaction, its voice learned
        from the moved utterances.

        In one transaction: the archive, the nodes quoting or summarising those lines, the lines'
        vectors, and both speakers' voices (recomputed from the voice of every utterance each now
        holds, except an enrolled voice, which stays as the person recorded it). A speaker the chain
        labelled ("Speaker 3") and nobody named, left with no utterance, is removed (unless
        `remove_empty` is false: a caller making several moves in one transaction removes them last).
        """
        ids = sorted({int(i) for i in utterance_ids})
        if not ids:
            raise InputError("no utterances to reassign")
        with self.store.atomic():
            if new_speaker:
                name = speakers.check_name(str(to))
                if name.isdigit():
                    raise InputError(f"a name of digits alone ({name!r}) would read as a speaker's id")
                if self.store.find_speaker(name) is not None:
                    raise InputError(
                        f"a speaker named {name!r} exists already: give the lines to it, not to someone new"
                    )
                to = self.store.speaker_id(name)
            target = speakers.find(self.store, to)
            found = self.store.utterances(ids)
            missing = sorted(set(ids) - {u.id for u in found})
            if missing:
                raise InputError(f"no utterance {missing[0]} (of {len(ids)} to reassign)")
            moving = [u for u in found if u.speaker != target.name]
            if not moving:
                return Reassignment(target, (), ())
            speakers.relabel_moved_lines(self.store, self._embedder, self.tokenizer, moving, target.name)
            former = self.store.move_utterance_ids([u.id for u in moving if u.id is not None], target.id)
            moved = self.store.utterances(u.id for u in moving)
            speakers.reembed_lines(self.store, self._embedder, moved)
            removed = self.remove_empty_speakers() if remove_empty else []
            for sid in (target.id, *former):
                sp = self.store.find_speaker(sid)
                if sp is None:
                    continue
                voice = self.store.speaker_voice(sid)
                if voice is not None and not sp.enrolled:
                    self.store.set_voice(sid, voice[0], voice[1])
            opts = self.settings.memory
            enforce_budget(self.store, opts.budget, opts.utility, self.store.clock)
            self.engine.reload_buffer()
            self.store.audit(
                "reassign_utterances",
                {"speaker": target.id, "utterances": len(moved), "from": sorted(former), "by": why},
            )
        return Reassignment(speakers.find(self.store, target.id), tuple(u.id for u in moved if u.id), tuple(removed))

    def remove_empty_speakers(self) -> list[int]:
        """Remove speakers the chain labelled, nobody named or enrolled, who hold no utterance."""
        gone = [sp.id for sp in self.store.speakers() if speakers.left_empty(sp)]
        for sid in gone:
            self.store.delete_speaker(sid)
        return gone

    def _relabelled(self, speaker_id: int, old: str, new: str) -> None:
        speakers.relabel_nodes(self.store, self._embedder, self.tokenizer, old, new)
        speakers.reembed_utterances(self.store, self._embedder, speaker_id)
        opts = self.settings.memory
        enforce_budget(self.store, opts.budget, opts.utility, self.store.clock)
        # The sensing buffer holds utterances with their speaker's name; read it again.
        self.engine.reload_buffer()

    # --- reading -----------------------------------------------------------------------------

    def check_question(self, question: str) -> str:
        q = " ".join((question or "").split())
        if not q:
            raise InputError("the question is empty")
        limit = self.settings.memory.answer.max_question_chars
        if len(q) > limit:
            raise InputError(
                f"the question is {len(q):,} characters long; the limit is {limit:,} (memory.answer.max_question_chars)"
            )
        return q

    def recall_filter(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
    ) -> RecallFilter:
        """Check a caller's window and speaker; the speaker (a name or an id) must be known."""
        for name, value in (("since", since), ("until", until)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InputError(f"{name} must be seconds since the epoch, got {value!r}")
        if since is not None and until is not None and since >= until:
            raise InputError("since must be before until")
        name = speakers.find(self.store, speaker).name if speaker is not None else None
        return RecallFilter(
            float(since) if since is not None else None, float(until) if until is not None else None, name
        )

    def search(
        self,
        query: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        use: bool = False,
        now: float | None = None,
    ) -> Retrieval:
        """What an answer would see: the recalled lines, the tree paths and the buffers.

        `since`/`until` (seconds since the epoch) and `speaker` (a name or id) limit the recall;
        `now` is when the question is asked (default: the wall clock), against which its own
        words ("last week") are read. `use=True` counts the paths as used (Eq. 1's f and dt),
        as asking does.
        """
        q = self.check_question(query)
        return self._recall(q, self.recall_filter(since=since, until=until, speaker=speaker), use=use, now=now)[0]

    def _recall(
        self, q: str, given: RecallFilter, *, use: bool, now: float | None
    ) -> tuple[Retrieval, np.ndarray, _Scored]:
        """`search` of a checked question and filter, the embedding of the topic it recalled with, and
        each recalled line's relevance (`_relevance`), which decides the archive and the answer."""
        now = _time.time() if now is None else now
        opts = self.settings.memory
        reading = read_question(q, self.store.speaker_names(), now, self.settings.zone)
        window = self._with_inferred(given, reading)
        vector = self._embedder.encode_one(reading.topic)
        found = recall(
            self.store,
            reading,
            vector,
            window,
            opts.retrieval,
            opts.utility,
            self.store.clock,
            conversation_gap=opts.stsb.max_gap_seconds,
        )
        if use and found.lines:
            self._mark_used([r.evidence for r in found.lines[: opts.retrieval.max_events]])
        short_term = tuple(u for u in self.engine.buffer.visible if window.admits(u.speaker, u.time))
        pending = tuple(
            b for b in self.store.pending_blocks() if any(window.admits(u.speaker, u.time) for u in b.utterances)
        )
        retrieval = Retrieval(
            q,
            found.paths,
            short_term,
            pending,
            found.relevance,
            found.lines,
            window,
            reading.terms,
            found.lexical_match,
            reading.named,
            found.replies,
            found.about,
            of_them=found.of_them,
        )
        scored = self._relevance(retrieval, vector)
        if opts.answer.archive_fallback:
            retrieval, scored = self._from_archive(retrieval, vector, scored)
        return retrieval, vector, scored

    def _from_archive(self, held: Retrieval, vector: np.ndarray, kept: _Scored) -> tuple[Retrieval, _Scored]:
        """The archived lines nearest the question (whether or not the memory still holds them), marked
        as from the archive, where the memory holds nothing relevant (`answer.min_relevance`) or
        nothing as relevant as they are by `answer.archive_margin`; else `held`, whose relevance is
        `kept`. Either with its relevance. Forgotten and expired lines are no longer archived, so
        the fallback cannot bring them back."""
        opts = self.settings.memory.answer
        if kept.best >= opts.min_relevance and kept.best + opts.archive_margin > 1.0:
            return held, kept  # relevance is at most 1: no archived line can be nearer by the margin
        found = self.store.archived_lines(vector, self.settings.memory.retrieval.dense_k, held.filter)
        lines = tuple(RecalledLine(Evidence.of(u), cosine, ("archive",)) for u, cosine in found)
        if not lines:
            return held, kept
        archived = replace(
            held,
            paths=(),
            lines=lines,
            replies=(),
            from_archive=True,
            relevance=max((r.score for r in lines), default=0.0),
        )
        nearest = self._relevance(archived, vector)
        if nearest.best >= opts.min_relevance and (
            kept.best < opts.min_relevance or nearest.best >= kept.best + opts.archive_margin
        ):
            return archived, nearest
        return held, kept

    def _with_inferred(self, given: RecallFilter, reading: QuestionReading) -> RecallFilter:
        """The caller's filter, completed by what the question's own words name (a bound given wins)."""
        opts = self.settings.memory.retrieval
        since, until, speaker, inferred = given.since, given.until, given.speaker, []
        if opts.infer_window and reading.window is not None and since is None and until is None:
            since, until = reading.window
            inferred += ["since", "until"]
        return RecallFilter(since, until, speaker, tuple(inferred))

    def _mark_used(self, lines: list[Evidence]) -> None:
        """A question used the nodes that rest on the lines it recalled, and the nodes just above them
        (Eq. 1's f and dt)."""
        nodes = self.store.node_ids_of(e.utterance_id for e in lines)
        ids = [nid for ns in nodes.values() for nid in ns]
        above = {n.parent_id for n in self.store.nodes_by_id(ids) if n.parent_id is not None}
        with self.store.atomic():
            self.store.touch([*ids, *above], self.store.clock)

    def _candidates(self, retrieval: Retrieval) -> list[Candidate]:
        """The recalled lines in order of relevance, each with its event's summary where that adds words,
        the question just before each of the strongest lines, after each a later line that may update
        it, and last the replies to the best matches.

        With `answer.min_score_share`, a line scoring below that share of the strongest line's
        (`_strongest`) is not offered at all: the 0.5B answerer finds the evidence among a few
        strong matches more often than among many weak ones, however much room the cap leaves."""
        opts = self.settings.memory.answer
        # Fused scores are positive (reciprocal ranks plus a non-negative utility tie-break), so a
        # share of 0 keeps every line.
        floor = opts.min_score_share * _strongest(retrieval.lines)
        lines = [r.evidence for r in retrieval.lines if r.score >= floor]
        # An update that does not repeat the question's words ranks under the floor while the line
        # it updates passes, and the answer would give the old value. For a question about one
        # person, an update that names no one (said in talk about them, recall's `of_them`) may
        # rank under every arm's cut and not be recalled at all. A line of either that may state a
        # new value for a line that passed is offered right after that line: it is as much the
        # answer as the line it may update, and offered last, a full context cut it (figures in
        # default.yaml, `supersede.enabled`).
        ranked = {r.evidence.utterance_id for r in retrieval.lines}
        updates = self.engine.supersession.possible_updates(
            self.store,
            [e.utterance() for e in lines],
            [r.evidence.utterance() for r in retrieval.lines if r.score < floor]
            + self.store.utterances(sorted(retrieval.of_them - ranked)),
        )
        summaries: dict[int, str] = {}
        if opts.summaries and lines:
            node_ids = self.store.node_ids_of(e.utterance_id for e in lines)
            nodes = {n.id: n for n in self.store.nodes_by_id({nid for ns in node_ids.values() for nid in ns})}
            events = {nid for nid, n in nodes.items() if n.level is Level.EVENT}
            event_sources = self.store.sources(events)
            for e in lines:
                for nid in node_ids.get(e.utterance_id, []):
                    if nid in events and adds_words(nodes[nid].text, event_sources.get(nid, [])):
                        summaries[e.utterance_id] = nodes[nid].text
                        break
        window = retrieval.filter
        out: list[Candidate] = []
        for rank, e in enumerate(lines):
            out.append(Candidate(e, summaries.get(e.utterance_id)))
            before = self.store.adjacent(e.utterance_id, after=False) if rank < opts.neighbours else None
            if (
                before is not None
                and before.id is not None
                and before.speaker != e.speaker
                and not is_statement(before.text)
                and self.tokenizer.count(before.text) <= opts.trim_above
                and window.admits(before.speaker, before.time)
                and self.store.held_ids_among([before.id])
            ):
                out.append(Candidate(Evidence.of(before)))
            out += [Candidate(Evidence.of(u)) for u in updates.get(e.utterance_id, [])]
        # The replies come after the lines the arms ranked: the cap cuts them first.
        shown = {c.evidence.utterance_id for c in out}
        out += [Candidate(e) for e in retrieval.replies if e.utterance_id not in shown]
        return out

    def prepare(
        self,
        question: str,
        *,
        since: float | None = None,
        until: float | None = None,
        speaker: str | int | None = None,
        use: bool = True,
        now: float | None = None,
    ) -> PreparedQuestion:
        """Recall and frame a question: the part of asking that reads (and, with `use`, marks) the store.

        The daemon runs this on its single writer thread and the generation elsewhere, so a slow
        answer never holds up the writes. `use=False` asks without leaving a mark (an observer:
        the benchmark's probes).
        """
        t0 = _time.perf_counter()
        q = self.check_question(question)
        retrieval, topic, scored = self._recall(
            q, self.recall_filter(since=since, until=until, speaker=speaker), use=False, now=now
        )
        nearest = self._nearness(retrieval, topic, scored)
        opts = self.settings.memory.answer
        # Nothing to say: no recalled line comes near the question, in its words or in meaning, or
        # for a question about one person, no line about them comes near what someone else's line
        # does (`relevance`). The model would only guess; then the answer is "not mentioned"
        # without asking it. Otherwise the model may still decline, and that stands.
        if not nearest.answerable(opts.min_relevance, opts.min_person_share):
            return PreparedQuestion(retrieval, None, (_time.perf_counter() - t0) * 1000, nearest)
        context = build_context(
            self._candidates(retrieval),
            self.tokenizer,
            opts.context_tokens,
            self.settings.zone,
            terms=retrieval.terms,
            whole=opts.whole_lines,
            trim_above=opts.trim_above,
            # Sentences are weighed against the topic recall used: without the speakers' names, which
            # would favour the greetings that name them ("Thanks, Sam!").
            closeness=lambda sentences: [float(s) for s in self._embedder.encode(sentences) @ topic],
        )
        if use:
            self._mark_used(list(context.sources))
        return PreparedQuestion(
            retrieval, build_prompt(retrieval.question, context), (_time.perf_counter() - t0) * 1000, nearest
        )

    def _relevance(self, retrieval: Retrieval, topic: np.ndarray) -> _Scored:
        """Each recalled line's relevance to the question (`memory.relevance`)."""
        vectors = self.store.utterance_vectors([r.evidence.utterance_id for r in retrieval.lines])
        weights = word_weights(retrieval.terms, *self.store.line_frequencies(retrieval.terms))
        lines = {
            r.evidence.utterance_id: relevance(r.evidence.text, vectors.get(r.evidence.utterance_id), topic, weights)
            for r in retrieval.lines
        }
        return _Scored(lines, weights)

    def _nearness(self, retrieval: Retrieval, topic: np.ndarray, scored: _Scored) -> Nearness:
        """How near the recalled lines come to the question, and for a question about one person
        how near the nearest line, or part of one, about them comes against the nearest of all.
        Only answering reads the person's (`min_person_share`): recall and search do not pay for
        its embeddings."""
        about, best, scores, weights = retrieval.about, scored.best, scored.lines, scored.weights
        if about is None or not retrieval.lines:
            return Nearness(best, None if about is None else 0.0)
        # Each line read once: whether it is about them by what it says or the talk before it
        # (recall's `of_them`), and its own and addressed sentences.
        naming = {
            r.evidence.utterance_id
            for r in retrieval.lines
            if r.evidence.utterance_id in retrieval.of_them or speaks_of(r.evidence.text, about)
        }
        split = {r.evidence.utterance_id: own_and_addressed(r.evidence.text) for r in retrieval.lines}
        answered_by = self._answered_by([uid for uid, (_, addressed) in split.items() if addressed])
        theirs = self._their_thing(retrieval, about, naming)
        # A line that speaks of its speaker's own matters and to its listener ("Wow! What got you
        # into running?", "Oh no. Your wrist must be sore.") is read in parts where it comes within
        # the person test's share of the nearest: its own sentences are its speaker's, what it asks
        # the listener or says of them is about the one who answers it, and each part is as near
        # as its own embedding and words say. The person's nearest is then a share of the nearest
        # line or part of all (a line's score may rest on the words of both its parts).
        reach = best * self.settings.memory.answer.min_person_share
        of_person = of_all = 0.0
        parts: list[tuple[str, bool]] = []  # (text, whether it is about the person)
        for r in retrieval.lines:
            ev, score = r.evidence, scores[r.evidence.utterance_id]
            if ev.utterance_id in naming or bool(theirs and not theirs.isdisjoint(content_stems(ev.text))):
                of_person, of_all = max(of_person, score), max(of_all, score)
                continue
            own, addressed = split[ev.utterance_id]
            answerer = answered_by.get(ev.utterance_id)
            if own and addressed and score >= reach:
                parts += [(own, about == ev.speaker), (addressed, about == answerer)]
                continue
            of_all = max(of_all, score)
            if own and addressed and about in (ev.speaker, answerer):
                # Too far to matter: the person's part is read by its words alone.
                of_person = max(of_person, relevance(own if about == ev.speaker else addressed, None, topic, weights))
            elif about == (ev.speaker if own else answerer):
                of_person = max(of_person, score)
        texts = [text for text, _ in parts]
        for (text, theirs_part), vector in zip(parts, self._embedder.encode(texts) if texts else [], strict=True):
            score = relevance(text, vector, topic, weights)
            of_all = max(of_all, score)
            if theirs_part:
                of_person = max(of_person, score)
        return Nearness(best, of_person, of_all)

    def _their_thing(self, retrieval: Retrieval, about: str, naming: set[int]) -> set[str]:
        """The stems of what a question about one person gives them ("Lucy's housewarming") that a
        recalled line ties to them, speaking of them and of it ("Lucy pushed the housewarming to
        Friday"): then a line about it is about them too ("we're expecting 13 guests at the
        housewarming"), as a group talks of "the housewarming" without naming whose it is. Where no
        line ties the thing to them, it may be someone else's: Alex's daughter is not Sam's.
        `naming`: the recalled lines that speak of them, or go on about them (`Retrieval.of_them`)."""
        keys = {stem(thing) for thing in possessed(retrieval.question, about)}
        if not keys:
            return set()
        said = [content_stems(r.evidence.text) for r in retrieval.lines if r.evidence.utterance_id in naming]
        return {key for key in keys if any(key in stems for stems in said)}

    def _answered_by(self, asked: list[int]) -> dict[int, str]:
        """Who answered each of these lines that asks or speaks to its listener (the next turn's
        speaker): a question put to someone ("Who is looking after your dog, Priya?") is about the
        one who answers it, whose reply ("My sister will take Biscuit") shares none of the
        question's words."""
        if not asked:
            return {}
        replies = self.store.turns_beside(asked, after=True)
        speakers = {u.id: u.speaker for u in self.store.utterances(replies.values())}
        return {uid: speakers[reply] for uid, reply in replies.items() if reply in speakers}

    def answer_stream(self, prepared: PreparedQuestion) -> Iterator[str | Answer]:
        """Yield the answer's text as it is generated, then the finished `Answer`. Touches no table."""
        retrieval, prompt = prepared.retrieval, prepared.prompt
        if prompt is None:
            yield DONT_KNOW
            yield Answer(DONT_KNOW, (), False, 0, prepared.retrieval_ms, 0.0, retrieval, filter=retrieval.filter)
            return
        t1 = _time.perf_counter()
        for item in respond(self.llm, prompt.messages, self.settings.memory.answer.max_tokens):
            if not isinstance(item, Reply):
                yield item
                continue
            evidence = cited_evidence(item.text, prompt, self.settings.zone) if item.knows else ()
            yield Answer(
                item.text,
                evidence,
                item.knows,
                prompt.context_tokens,
                prepared.retrieval_ms,
                (_time.perf_counter() - t1) * 1000,
                retrieval,
                prompt.sources,
                retrieval.filter,
                retrieval.from_archive,
            )

    def ask_stream(self, question: str, **recall: Any) -> Iterator[str | Answer]:
        """Yield the answer's text as it is generated, then the finished `Answer`.

        `recall` takes `prepare`'s keywords: since, until, speaker, use, now.
        """
        yield from self.answer_stream(self.prepare(question, **recall))

    def ask(self, question: str, **recall: Any) -> Answer:
        for item in self.ask_stream(question, **recall):
            if isinstance(item, Answer):
                return item
        raise AssertionError("ask_stream ended without an answer")  # pragma: no cover

    def tree(self) -> list[TreeNode]:
        from .budget import utility

        nodes = self.store.nodes()
        children: dict[int | None, list[Node]] = {}
        for n in nodes:
            children.setdefault(n.parent_id, []).append(n)
        now, util = self.store.clock, self.settings.memory.utility

        def build(n: Node) -> TreeNode:
            kids = tuple(build(c) for c in children.get(n.id, []))
            return TreeNode(n, utility(n.frequency, n.last_access, now, util), kids)

        return [build(n) for n in children.get(None, [])]

    def stats(self) -> MemoryStats:
        return stats_of(self.store, self.settings, buffered=len(self.engine.buffer.buffer))


def stats_of(store: Store, settings: Settings, *, buffered: int) -> MemoryStats:
    """The memory's size: `buffered` lines wait in the sensing buffer (the engine's, when one runs)."""
    counts = store.node_counts()
    return MemoryStats(
        tokens=store.total_tokens(),
        token_budget=settings.memory.budget.token_budget,
        scenes=counts[Level.SCENE],
        events=counts[Level.EVENT],
        amus=counts[Level.AMU],
        utterances=store.utterance_count(),
        pending_blocks=store.pending_count(),
        buffered=buffered,
        database_bytes=store.file_bytes(),
    )
