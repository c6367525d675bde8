"""Re-clustering the session: real voice embeddings (Resemblyzer on espeak-ng speech), real clustering."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from assistant.config import ReclusterOptions
from assistant.records import SAMPLE_RATE
from assistant.speech.diarize import Diarizer, diarizer_from_settings
from assistant.speech.recluster import VoiceSample, cluster_voices, plan_moves

from .test_diarize import TEXTS
from .test_transcribe import speak, stt_settings

# Two voices the online pass puts in one speaker: whole turns of each score a cosine of about
# 0.81 with the other's, above the diarizer's match threshold (voice matrix, BENCHMARKS.md).
CLOSE_A = "en-us+m3"
CLOSE_B = "en-gb+f2"
# Far from both: a line of it is an odd utterance, not a person.
ODD_VOICE = "en-us+klatt4"


@pytest.fixture(scope="module")
def diarizer(tmp_path_factory) -> Diarizer:
    return diarizer_from_settings(stt_settings(tmp_path_factory.mktemp("enc"), "whisper-tiny.en"))


# Eight more, so that no voice says a sentence twice: the same words said twice embed alike, and
# one voice's lines then fall into two groups by what they say, which no conversation does.
MORE_TEXTS = [
    "The kettle is broken again, so I made the tea in a saucepan this morning.",
    "My sister is coming round on Sunday with her two children and the dog.",
    "Have you seen the new bakery by the station? Their bread sells out by nine.",
    "I forgot to water the tomatoes, and now half of the leaves have gone yellow.",
    "The bus was twenty minutes late, then it broke down before the bridge.",
    "We should paint the hallway before winter, a light grey would be nice.",
    "Remember that the recycling goes out on Thursday night, not on Friday.",
    "I finished the crossword except for one clue about a river in Scotland.",
]


@pytest.fixture(scope="module")
def voices(tmp_path_factory, diarizer) -> dict[str, list[tuple[np.ndarray, float]]]:
    """Each voice saying sixteen sentences, at two speeds: (unit embedding, seconds)."""
    work: Path = tmp_path_factory.mktemp("speech")
    out: dict[str, list[tuple[np.ndarray, float]]] = {}
    for voice in (CLOSE_A, CLOSE_B):
        folder = work / voice.replace("+", "-")
        said = [
            speak(text, voice, folder, speed=speed)
            for speed, texts in ((150, TEXTS), (185, MORE_TEXTS))
            for text in texts
        ]
        out[voice] = [(diarizer.embed(s), len(s) / SAMPLE_RATE) for s in said]
    return out


@pytest.fixture
def options(tmp_path) -> ReclusterOptions:
    return stt_settings(tmp_path, "whisper-tiny.en").diarization.recluster


def samples_of(voices, order: list[str], speaker_of: dict[str, int]) -> list[VoiceSample]:
    """Interleave the voices' utterances as a conversation would, labelled as `speaker_of` says."""
    taken = {v: 0 for v in voices}
    out = []
    clock = 0.0
    for i, voice in enumerate(order):
        embedding, seconds = voices[voice][taken[voice]]
        taken[voice] += 1
        out.append(VoiceSample(100 + i, speaker_of[voice], embedding, seconds, clock))
        clock += seconds + 0.8
    return out


def test_the_online_threshold_cannot_tell_these_voices_apart(voices, diarizer):
    a = np.stack([e for e, _ in voices[CLOSE_A]])
    b = np.stack([e for e, _ in voices[CLOSE_B]])
    between = float((a @ b.T).mean())
    within = float(
        np.mean([(a @ a.T)[np.triu_indices(len(a), 1)].mean(), (b @ b.T)[np.triu_indices(len(b), 1)].mean()])
    )
    # Both above the match threshold, so online matching merges them; yet each voice is closer to itself.
    assert between > diarizer.options.match_threshold
    assert within > between


def test_two_merged_voices_are_split(voices, options):
    order = [CLOSE_A, CLOSE_B] * 8
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 1})  # the online pass heard one voice
    moves = plan_moves(samples, options, fixed=set())
    assert len(moves) == 1 and moves[0].speaker_id is None  # a voice not known before
    moved = set(moves[0].utterance_ids)
    a_ids = {s.utterance_id for s, v in zip(samples, order, strict=True) if v == CLOSE_A}
    b_ids = {s.utterance_id for s, v in zip(samples, order, strict=True) if v == CLOSE_B}
    assert moved in (a_ids, b_ids)  # one whole voice moves, nothing of the other
    assert np.linalg.norm(moves[0].centroid) == pytest.approx(1.0)


def test_one_voice_stays_one(voices, options):
    for voice in (CLOSE_A, CLOSE_B):
        samples = samples_of(voices, [voice] * 16, {voice: 1})
        assert len(samples) >= options.min_utterances
        assert plan_moves(samples, options, fixed=set()) == []
        assert (
            cluster_voices(
                np.stack([s.embedding for s in samples]), np.array([s.seconds for s in samples]), options
            ).silhouette
            is None
        )


def test_right_labels_are_left_alone_and_a_split_voice_is_joined(voices, options):
    order = [CLOSE_A, CLOSE_B] * 8
    right = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 2})
    assert plan_moves(right, options, fixed=set()) == []
    # The online pass founded a third speaker on a few of B's lines: they go back to B.
    split = [dataclasses.replace(s, speaker_id=3) if i in (3, 7) else s for i, s in enumerate(right)]
    moves = plan_moves(split, options, fixed=set())
    assert [(m.speaker_id, m.utterance_ids) for m in moves] == [(2, (103, 107))]


def test_named_speakers_and_corrected_lines_keep_their_labels(voices, options):
    order = [CLOSE_A, CLOSE_B] * 8
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 1})
    assert plan_moves(samples, options, fixed={1}) == []
    # A person put two of the moving voice's lines under speaker 1 by hand: they stay; the rest move.
    free = plan_moves(samples, options, fixed=set())[0].utterance_ids
    (move,) = plan_moves(samples, options, fixed=set(), pinned=frozenset(free[:2]))
    assert move.utterance_ids == free[2:]


def test_short_lines_follow_the_nearest_voice(voices, options):
    order = [CLOSE_A, CLOSE_B] * 8
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 2})
    # Too short to shape the clusters, but a short line of B's labelled A still goes to B.
    short = dataclasses.replace(samples[1], speaker_id=1, seconds=options.min_seconds / 2)
    moves = plan_moves([*samples[:1], short, *samples[2:]], options, fixed=set())
    assert [(m.speaker_id, m.utterance_ids) for m in moves] == [(2, (101,))]


def test_voices_told_apart_online_are_not_folded_when_no_split_holds_up(voices, options):
    # Two of B's lines beside A's monologue: too little for a voice of its own in the clustering,
    # but the online pass heard them as another voice, and that stands.
    order = [CLOSE_A] * 14 + [CLOSE_B] * 2
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 2})
    assert plan_moves(samples, options, fixed=set()) == []


def test_too_little_speech_changes_nothing(voices, options):
    samples = samples_of(voices, [CLOSE_A, CLOSE_B] * 5, {CLOSE_A: 1, CLOSE_B: 1})
    assert len(samples) < options.min_utterances
    assert plan_moves(samples, options, fixed=set()) == []


def anchor_of(voices, voice: str) -> np.ndarray:
    """A voice as enrolled: the unit mean of its utterances."""
    mean = np.stack([e for e, _ in voices[voice]]).mean(axis=0)
    return mean / np.linalg.norm(mean)


def test_a_guest_heard_as_someone_enrolled_becomes_a_voice_of_their_own(voices, options):
    order = [CLOSE_A, CLOSE_B] * 8
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 1})  # B, a guest, was matched to enrolled 1
    b_ids = {s.utterance_id for s, v in zip(samples, order, strict=True) if v == CLOSE_B}
    (move,) = plan_moves(samples, options, fixed={1}, anchors={1: anchor_of(voices, CLOSE_A)})
    assert move.speaker_id is None and set(move.utterance_ids) == b_ids
    # Whichever voice was enrolled keeps its own lines, however much the other said.
    (move,) = plan_moves(samples, options, fixed={1}, anchors={1: anchor_of(voices, CLOSE_B)})
    assert move.speaker_id is None and set(move.utterance_ids) == {s.utterance_id for s in samples} - b_ids


def test_an_enrolled_voice_never_loses_lines_to_another_known_voice(voices, options):
    order = [CLOSE_A, CLOSE_B] * 8
    # Two of B's lines were matched to enrolled 1; the clustering puts them with speaker 2's.
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 2})
    samples = [dataclasses.replace(s, speaker_id=1) if i in (3, 7) else s for i, s in enumerate(samples)]
    assert plan_moves(samples, options, fixed=set()) != []
    assert plan_moves(samples, options, fixed={1}, anchors={1: anchor_of(voices, CLOSE_A)}) == []


def test_a_line_matched_to_the_wrong_enrolled_voice_goes_to_the_right_one(voices, options):
    order = [CLOSE_A, CLOSE_B] * 8
    # Both voices enrolled; online, two of B's lines matched A's enrollment.
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 2})
    samples = [dataclasses.replace(s, speaker_id=1) if i in (3, 7) else s for i, s in enumerate(samples)]
    anchors = {1: anchor_of(voices, CLOSE_A), 2: anchor_of(voices, CLOSE_B)}
    moves = plan_moves(samples, options, fixed={1, 2}, anchors=anchors)
    assert [(m.speaker_id, m.utterance_ids) for m in moves] == [(2, (103, 107))]


def test_lines_of_an_unnamed_voice_in_an_enrolled_voices_cluster_join_it(voices, options):
    order = [CLOSE_A, CLOSE_B] * 8
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 1})
    # Two of A's lines founded an unnamed voice online: by speech held, that voice would win A's
    # cluster (speaker 1 holds more of B's); the enrolled voice's anchor says the cluster is 1's.
    samples = [dataclasses.replace(s, speaker_id=3) if i in (0, 2) else s for i, s in enumerate(samples)]
    b_ids = {s.utterance_id for s, v in zip(samples, order, strict=True) if v == CLOSE_B}
    moves = plan_moves(samples, options, fixed={1}, anchors={1: anchor_of(voices, CLOSE_A)})
    assert sorted((m.speaker_id or 0, m.utterance_ids) for m in moves) == [(0, tuple(sorted(b_ids))), (1, (100, 102))]


def test_two_close_voices_beside_an_odd_utterance_are_split(voices, diarizer, options, tmp_path):
    # One line of a voice unlike both (two people at once, a laugh, a passer-by) is what a
    # clustering cuts off first; cutting nothing that leaves it alone would leave the two voices merged.
    odd = speak("Sorry, wrong room, I was looking for the dentist.", ODD_VOICE, tmp_path)
    order = [CLOSE_A, CLOSE_B] * 8
    samples = samples_of(voices, order, {CLOSE_A: 1, CLOSE_B: 1})
    at = samples[4].start + samples[4].seconds + 0.4
    samples.insert(5, VoiceSample(99, 1, diarizer.embed(odd), len(odd) / SAMPLE_RATE, at))
    moves = plan_moves(samples, options, fixed=set())
    a_ids = {100 + i for i, v in enumerate(order) if v == CLOSE_A}
    b_ids = {100 + i for i, v in enumerate(order) if v == CLOSE_B}
    assert len(moves) == 1
    assert set(moves[0].utterance_ids) - {99} in (a_ids, b_ids)


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def _talk(rng: np.random.Generator, four: list[np.ndarray], noise: float) -> list[VoiceSample]:
    """60 lines of 3 s from four voices in a random order, each labelled with its own speaker (1-4)."""
    samples, clock = [], 0.0
    for i in range(60):
        who = int(rng.integers(4))
        said = _unit(four[who] + noise * _unit(rng.normal(size=32)))
        samples.append(VoiceSample(100 + i, who + 1, said, 3.0, clock))
        clock += 4.0
    return samples


def _best_cut(samples: list[VoiceSample], options: ReclusterOptions) -> int:
    embeddings = np.stack([s.embedding for s in samples])
    return int(cluster_voices(embeddings, np.full(len(samples), 3.0), options).labels.max()) + 1


@pytest.mark.parametrize("groups", [(2, 2), (3, 1)])
def test_voices_told_apart_are_not_folded_by_a_coarser_cut(options, groups):
    # Four voices in groups of close ones (two pairs; three and one): the best cut of the window
    # is the groups, and it would fold the voices of each group into one. The session already
    # holds them as four speakers, and each group's lines split between them by the same test:
    # they stay four.
    rng = np.random.default_rng(3)
    axes = [_unit(rng.normal(size=32)) for _ in groups]
    group_of = [g for g, size in enumerate(groups) for _ in range(size)]
    samples = _talk(rng, [_unit(axes[g] + 0.35 * _unit(rng.normal(size=32))) for g in group_of], 0.3)
    assert _best_cut(samples, options) < 4
    assert plan_moves(samples, options, fixed=set()) == []
    # Where the session holds each group as one speaker, the same window does not split it for them.
    as_groups = [dataclasses.replace(s, speaker_id=group_of[s.speaker_id - 1] + 1) for s in samples]
    assert plan_moves(as_groups, options, fixed=set()) == []


def test_a_fold_is_looked_into_again_inside_each_part(options):
    # Three close voices, two of them closer still, and a fourth apart: the window's best cut is
    # the three against the fourth, and the three split first into the two and the third. The
    # two are speakers of their own too, so that part is split again.
    rng = np.random.default_rng(1)
    group = [_unit(rng.normal(size=32)) for _ in range(2)]
    pair = _unit(group[0] + 0.5 * _unit(rng.normal(size=32)))
    four = [
        _unit(pair + 0.25 * _unit(rng.normal(size=32))),
        _unit(pair + 0.25 * _unit(rng.normal(size=32))),
        _unit(group[0] + 0.5 * _unit(rng.normal(size=32))),
        group[1],
    ]
    samples = _talk(rng, four, 0.2)
    assert _best_cut(samples, options) == 2
    assert plan_moves(samples, options, fixed=set()) == []


def test_a_guest_inside_a_fold_of_enrolled_voices_becomes_a_voice_of_its_own(options):
    # Three enrolled voices, two of them close, and a guest close to the first, matched to the
    # first online: the window's best cut folds the close three together. Their lines split into
    # the two enrolled voices and the guest; the guest's lines leave the first for a new voice.
    rng = np.random.default_rng(5)
    group = [_unit(rng.normal(size=32)) for _ in range(2)]
    first = _unit(group[0] + 0.5 * _unit(rng.normal(size=32)))
    four = [
        first,
        group[1],
        _unit(group[0] + 0.5 * _unit(rng.normal(size=32))),
        _unit(first + 0.5 * _unit(rng.normal(size=32))),  # the guest
    ]
    samples = _talk(rng, four, 0.2)
    guest = {s.utterance_id for s in samples if s.speaker_id == 4}
    online = [dataclasses.replace(s, speaker_id=1) if s.speaker_id == 4 else s for s in samples]
    anchors = {i + 1: four[i] for i in range(3)}
    assert _best_cut(samples, options) < 4
    moves = plan_moves(online, options, fixed={1, 2, 3}, anchors=anchors)
    assert [(m.speaker_id, set(m.utterance_ids)) for m in moves] == [(None, guest)]
