"""/speakers: the voices heard, naming and merging them, and correcting who said what."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from ..converters import speaker_out
from ..wire import MergeSuggestionOut, Reassign, ReassignOut, SpeakerMerge, SpeakerName, SpeakerOut, UtteranceOut
from .shared import ERRORS, DaemonDep

router = APIRouter()


@router.get("/speakers", response_model=list[SpeakerOut], summary="Voices heard, with how much each said")
async def speakers(daemon: DaemonDep) -> list[SpeakerOut]:
    return [speaker_out(sp) for sp in await run_in_threadpool(daemon.speakers)]


@router.get(
    "/speakers/suggestions",
    response_model=list[MergeSuggestionOut],
    summary="Speakers whose voices sound alike: perhaps one person heard as two (merge them if so)",
)
async def merge_suggestions(daemon: DaemonDep) -> list[MergeSuggestionOut]:
    return [
        MergeSuggestionOut(keep=speaker_out(m.keep), other=speaker_out(m.other), cosine=round(m.cosine, 3))
        for m in await run_in_threadpool(daemon.merge_suggestions)
    ]


@router.get(
    "/speakers/{key}/utterances",
    response_model=list[UtteranceOut],
    summary="A voice's last utterances, oldest first: who is this, before naming them",
    responses=ERRORS,
)
async def speaker_lines(
    key: str, daemon: DaemonDep, limit: Annotated[int, Query(ge=1, le=500)] = 20
) -> list[UtteranceOut]:
    found = await run_in_threadpool(daemon.speaker_lines, key, limit)
    return [UtteranceOut(utterance_id=u.id or 0, speaker=u.speaker, time=u.time, text=u.text) for u in found]


@router.post(
    "/speakers/{key}/name",
    response_model=SpeakerOut,
    summary="Name a voice; its transcript and memory are relabelled",
    responses=ERRORS,
)
async def name_speaker(key: str, body: SpeakerName, daemon: DaemonDep) -> SpeakerOut:
    return speaker_out(await run_in_threadpool(daemon.rename_speaker, key, body.name))


@router.post(
    "/speakers/merge", response_model=SpeakerOut, summary="Two labels are one voice: merge them", responses=ERRORS
)
async def merge_speakers(body: SpeakerMerge, daemon: DaemonDep) -> SpeakerOut:
    return speaker_out(await run_in_threadpool(daemon.merge_speakers, body.keep, body.other))


@router.post(
    "/utterances/reassign",
    response_model=ReassignOut,
    summary="Correct who said what: utterances (by id or time range) go to another speaker, with their memory",
    responses=ERRORS,
)
async def reassign(body: Reassign, daemon: DaemonDep) -> ReassignOut:
    window = body.limits(daemon.settings.zone)
    result = await run_in_threadpool(
        daemon.reassign, body.to, body.utterance_ids, new_speaker=body.new_speaker, **window
    )
    return ReassignOut(
        speaker=speaker_out(result.speaker), moved=list(result.moved), removed_speakers=list(result.removed_speakers)
    )
