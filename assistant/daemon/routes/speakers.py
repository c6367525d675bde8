"""/speakers: the voices heard, enrolling, naming and merging them, and correcting who said what."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from ...listening import MIN_ENROLL_SPEECH_SECONDS
from ...records import Evidence, MergeSuggestion, NameSuggestion, Reassignment, Speaker, Utterance
from ...wire import to_json
from ..push_to_talk import ENROLLMENT
from ..requests import EnrollFile, Reassign, SpeakerMerge, SpeakerName
from ..schema import model_of
from .shared import ERRORS, DaemonDep

router = APIRouter()


@router.get(
    "/speakers",
    response_model=list[model_of(Speaker)],
    summary="Voices heard, with how much each said, the seconds enrolled, and how surely recent speech matched",
)
async def speakers(daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.speakers))


@router.get(
    "/speakers/suggestions",
    response_model=list[model_of(MergeSuggestion)],
    summary="Speakers whose voices sound alike: perhaps one person heard as two (merge them if so)",
)
async def merge_suggestions(daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.merge_suggestions))


@router.get(
    "/speakers/names",
    response_model=list[model_of(NameSuggestion)],
    summary='Names unnamed voices gave themselves ("I\'m Sam"): name the voice if so',
)
async def name_suggestions(daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.name_suggestions))


@router.get(
    "/speakers/{key}/utterances",
    response_model=list[model_of(Evidence)],
    summary="A voice's last utterances, oldest first: who is this, before naming them",
    responses=ERRORS,
)
async def speaker_lines(key: str, daemon: DaemonDep, limit: Annotated[int, Query(ge=1, le=500)] = 20) -> Any:
    return lines(await run_in_threadpool(daemon.speaker_lines, key, limit))


@router.post(
    "/speakers/{key}/name",
    response_model=model_of(Speaker),
    summary="Name a voice; its transcript and memory are relabelled",
    responses=ERRORS,
)
async def name_speaker(key: str, body: SpeakerName, daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.rename_speaker, key, body.name))


@router.post(
    "/speakers/enroll",
    response_model=model_of(Speaker),
    summary="Enroll a voice from a recording of that person alone (a file on this machine); it is recognised at once",
    responses=ERRORS,
)
async def enroll_file(body: EnrollFile, daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.enroll_file, body.name, Path(body.path)))


@router.post(
    "/speakers/enroll/start",
    summary="Record a voice to enroll from the microphone (never stored as conversation); the name is checked now",
    responses=ERRORS,
)
async def enroll_start(body: SpeakerName, daemon: DaemonDep) -> dict[str, str]:
    await run_in_threadpool(daemon.start_enrollment, body.name)
    return {"state": "recording"}


@router.post(
    "/speakers/enroll/stop",
    response_model=model_of(Speaker),
    summary=f"Stop recording and enroll the voice (it needs {MIN_ENROLL_SPEECH_SECONDS:.0f} s of speech or more); "
    "it is recognised at once",
    responses=ERRORS,
)
async def enroll_stop(daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.finish_enrollment))


@router.post("/speakers/enroll/cancel", summary="Drop the voice being recorded", responses=ERRORS)
async def enroll_cancel(daemon: DaemonDep) -> dict[str, str]:
    daemon.push_to_talk.cancel(ENROLLMENT)
    return {"state": "cancelled"}


@router.post(
    "/speakers/merge",
    response_model=model_of(Speaker),
    summary="Two labels are one voice: merge them",
    responses=ERRORS,
)
async def merge_speakers(body: SpeakerMerge, daemon: DaemonDep) -> Any:
    return to_json(await run_in_threadpool(daemon.merge_speakers, body.keep, body.other))


@router.post(
    "/utterances/reassign",
    response_model=model_of(Reassignment),
    summary="Correct who said what: utterances (by id or time range) go to another speaker, with their memory",
    responses=ERRORS,
)
async def reassign(body: Reassign, daemon: DaemonDep) -> Any:
    window = body.limits(daemon.settings.zone)
    done = await run_in_threadpool(daemon.reassign, body.to, body.utterance_ids, new_speaker=body.new_speaker, **window)
    return to_json(done)


def lines(found: list[Utterance]) -> Any:
    """Stored utterances as the API lists them: as evidence is cited, with the utterance's id."""
    return to_json([Evidence(u.id or 0, u.speaker, u.time, u.text) for u in found])
