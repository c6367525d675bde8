"""A topic keeps who did what: an LLM-written topic is checked against the lines it cites.

The memory tree's event phrase for a block is written by the LLM ("Name who did what"), and a
small model may give one person's plan to two people, or add an act nobody spoke of. Before the
digest shows a topic, spaCy's parse reads the acts it gives to people (a verb with a named
subject: "Tom and Maya bake a cake" gives "bake" to both) and the acts the cited lines give
(the subject of each verb, told as the speaker for "I", the other speaker for "you" between two,
everyone present for "we", and the person named otherwise), with the people each act is done to
or with. A topic that gives an act to someone no cited line gives it to, does it to someone no
such line names ("Tom invites Maya" when he invited his parents), or names an act that no cited
line speaks of, is replaced by the cited line closest to it, quoted with its speaker: what was
said, not what was made of it.

Verbs that tell of the talk itself ("discussed", "mentioned", "agreed") are no act to check:
every cited line backs them. What they govern still is ("Tom agreed to bake").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..entities import grammar
from ..records import Evidence

# Verbs of talking: a topic says its people discussed, mentioned or agreed on things.
_TALK = {"discuss", "talk", "chat", "mention", "say", "tell", "ask", "share", "agree", "decide", "plan", "catch"}
_SOMEONE_ELSE = {"he", "she", "they", "him", "her", "them", "his", "their", "hers", "theirs"}


def _subjects(verb: Any) -> list[Any]:
    """The verb's subject words with their conjuncts; an xcomp's are its governor's ("going to bake")."""
    while True:
        found = [c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")]
        if found or verb.dep_ not in ("xcomp", "conj") or verb.head is verb:
            return [w for s in found if s.dep_ == "nsubj" for w in (s, *s.conjuncts)]
        verb = verb.head


def _who(word: Any, speaker: str, speakers: set[str]) -> set[str]:
    """Who a pronoun or a name in a line stands for ("*": someone not speaking); nobody for other words."""
    w = word.lower_
    others = speakers - {speaker}
    if w in {"i", "me", "my", "myself", "mine"}:
        return {speaker}
    if w in {"we", "us", "our", "ours", "ourselves"}:
        return set(speakers)
    if w in {"you", "your", "yours", "yourself"}:
        return others if len(others) == 1 else {"*"}
    if w in _SOMEONE_ELSE:
        return {"*"}
    return {word.text} if word.pos_ == "PROPN" else set()


def _acts(lines: Sequence[Evidence], docs: Sequence[Any]) -> list[tuple[str, set[str], set[str], set[str]]]:
    """The acts of the cited lines: each verb's lemma, who does it, who it is done to or with
    (the people its words name, or "you" and "me" told as the speakers they are), and the things
    its words name (the nouns' lemmas)."""
    speakers = {e.speaker for e in lines}
    acts = []
    for e, doc in zip(lines, docs, strict=True):
        for t in doc:
            if t.pos_ != "VERB":
                continue
            subjects = _subjects(t)
            doers = set().union(*(_who(s, e.speaker, speakers) for s in subjects)) if subjects else set()
            others = set().union(*(_who(w, e.speaker, speakers) for w in t.subtree if w not in subjects))
            things = {w.lemma_.lower() for w in t.subtree if w.pos_ == "NOUN"}
            acts.append((t.lemma_, doers, others, things))
    return acts


def _own_words(verb: Any) -> list[Any]:
    """The words a verb governs, short of another clause with a subject of its own ("Tom invited
    his parents and Maya will bake": Maya is not invited)."""
    out = []
    for w in verb.subtree:
        head, own = w, True
        while head.i != verb.i:
            if head.dep_ in ("conj", "ccomp", "advcl", "relcl", "parataxis") and _subjects(head):
                own = False
                break
            head = head.head
        if own and w.i != verb.i:
            out.append(w)
    return out


def _person(word: Any) -> bool:
    """A name that may be a person's ("Mum", "Ella"), not a day's or a place's."""
    return bool(word.pos_ == "PROPN" and word.ent_type_ in ("", "PERSON"))


def _covers(others: set[str], objects: set[str], speakers: set[str]) -> bool:
    """A line's act involves the people a topic names with it: each is named or spoken to there,
    or is someone not speaking whom a "her" or "them" may stand for."""
    return all(o in others or ("*" in others and o not in speakers) for o in objects)


def misattributed(topic: str, lines: Sequence[Evidence]) -> list[str]:
    """The acts `topic` gives to people that its cited lines do not ("Maya invite"), or to people
    none of them names, or does to people they do not ("Tom invite Maya"); empty when it keeps
    who did what."""
    nlp = grammar()
    docs = list(nlp.pipe(e.text for e in lines))
    acts = _acts(lines, docs)
    said = {t.lemma_ for doc in docs for t in doc}
    speakers = {e.speaker for e in lines}
    names = speakers | {t.text for doc in docs for t in doc if _person(t)}
    wrong = []
    for t in nlp(topic):
        if t.pos_ != "VERB" or t.lemma_ in _TALK:
            continue
        subjects = _subjects(t)
        strangers = {s.text for s in subjects if _person(s) and s.text not in names}
        wrong += [f"{who} {t.lemma_} (not in these lines)" for who in sorted(strangers)]
        people = {s.text for s in subjects if s.text in names}
        if not people:
            continue
        if t.lemma_ not in said:
            wrong += [f"{who} {t.lemma_} (nobody spoke of it)" for who in sorted(people)]
            continue
        objects = {w.text for w in _own_words(t) if w.text in names and w.text not in people}
        # What the act is done to: Leo booking the meeting room does not back "Leo booked the projector".
        things = {c.lemma_.lower() for c in t.children if c.dep_ == "dobj" and c.pos_ == "NOUN"}
        for who in sorted(people):
            backed = [
                (others, done_to)
                for lemma, doers, others, done_to in acts
                if lemma == t.lemma_ and (who in doers or ("*" in doers and who in names))
            ]
            if not backed:
                wrong.append(f"{who} {t.lemma_}")
            elif not any(_covers(others, objects, speakers) and things <= done_to for others, done_to in backed):
                wrong.append(" ".join([who, t.lemma_, *sorted(objects), *sorted(things)]))
    return wrong


def checked(topic: str, lines: Sequence[Evidence]) -> str:
    """The topic as written when it keeps who did what, else the cited line that shares most of
    its words (by lemma, leaving out stop words), quoted with its speaker."""
    if not lines or any(topic == f"{e.speaker}: {e.text}"[: len(topic)] for e in lines):
        return topic  # a quote (the extractive event) says what was said
    if not misattributed(topic, lines):
        return topic
    nlp = grammar()

    def meant(text: str) -> set[str]:
        return {t.lemma_.lower() for t in nlp(text) if t.is_alpha and not t.is_stop}

    about = meant(topic)
    closest = max(lines, key=lambda e: len(about & meant(e.text)))
    return f"{closest.speaker}: {closest.text}"
