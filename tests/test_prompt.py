"""Prompt assembly and evidence selection, with the real tokenizer of the answering LLM."""

import pytest

from assistant.llm import load_tokenizer
from assistant.memory.answer import Prompt, build_prompt, cited_evidence, strip_citations
from assistant.memory.records import Evidence, Level, Node, Retrieval, RetrievedPath, Utterance
from assistant.models import resolve

from .conftest import open_memory


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    mem = open_memory(tmp_path_factory.mktemp("tok"))
    source = str(resolve(mem.settings, "llm").path)
    mem.close()
    return load_tokenizer(source)


def _node(nid: int, level: Level, text: str, parent: int | None = None) -> Node:
    return Node(nid, level, parent, text, 3, 0, 0.0, 0.0, 1_700_000_000.0, 1_700_000_000.0)


def _path(i: int) -> RetrievedPath:
    ev = Evidence(100 + i, "Ana", 1_700_000_000.0 + i, f"I booked hotel number {i} near the harbour.")
    return RetrievedPath(
        _node(1, Level.SCENE, "Travel"),
        _node(10 + i, Level.EVENT, f"Ana books hotel {i}", 1),
        (_node(50 + i, Level.AMU, f"Ana booked hotel {i}", 10 + i),),
        1.0 - i / 100,
        (ev,),
    )


def test_context_is_cut_to_its_token_limit_and_trimmed_sources_cannot_be_cited(tokenizer):
    retrieval = Retrieval(
        "Which hotel?", tuple(_path(i) for i in range(40)), (Utterance("Bo", "Sounds good.", 1.7e9, 7),), ()
    )
    prompt = build_prompt("Which hotel?", retrieval, tokenizer, 300)
    assert prompt.context_tokens <= 300
    user = prompt.messages[-1]["content"]
    assert "Ana books hotel 0" in user and "Ana books hotel 39" not in user
    assert prompt.sources and all(f"[{n}] " in user for n in prompt.sources)
    # Path i's source is numbered i + 1; the short-term line comes after all 40 paths.
    kept_paths = [n for n in prompt.sources if n <= 40]
    assert kept_paths == list(range(1, len(kept_paths) + 1)) and len(kept_paths) < 40
    assert prompt.sources[41].text == "Sounds good."
    assert "14 November 2023" in user  # dates are shown so relative times can be resolved


def test_evidence_keeps_supported_citations_and_replaces_loose_ones():
    a = Evidence(1, "Priya", 0.0, "We fly out on the 14th of May.")
    b = Evidence(2, "Sam", 0.0, "Did everyone see the email?")
    prompt = Prompt(messages=[], sources={1: a, 2: b}, context_tokens=0)
    assert cited_evidence("They fly out on the 14th of May. [1]", prompt) == (a,)
    # A citation that shares no words with the answer is replaced by the best-supported source.
    assert cited_evidence("They fly out on the 14th of May. [2]", prompt) == (a,)
    assert cited_evidence("Purple elephants.", prompt) == ()
    assert strip_citations("In May [1][2].") == "In May."
