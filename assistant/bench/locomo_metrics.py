"""Answer-quality metrics exactly as LoCoMo's official evaluation computes them, plus BLEU-1 and ROUGE-L.

Token F1 follows `task_eval/evaluation.py` of the LoCoMo repository: lower-case, drop
punctuation (commas first), the articles and "and", Porter-stem every token, then F1 of the
token multisets. Multi-hop questions (category 1) split the gold answer and the prediction on
commas and average, over gold parts, the best F1 of any predicted part. Open-domain gold
answers (category 3) keep only what precedes the first semicolon. Adversarial questions
(category 5) score 1 when the prediction says the information is not there.

Temporal questions (category 2) are also scored by the date they mean (`date_accuracy`): token
F1 rewards copying the gold answer's wording ("the Sunday before 25 May 2023"), date accuracy
any wording of the same day, week, month or year.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from ..memory.answer import says_unknown
from .date_accuracy import DateScore, score_date

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = set(string.punctuation)
# LoCoMo's temporal category, as its official evaluation code numbers them (data README).
TEMPORAL = 2


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    from nltk.stem import PorterStemmer  # the official code stems with NLTK's Porter stemmer

    return PorterStemmer()


def normalize_answer(text: str) -> str:
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    pred, truth = answer_tokens(prediction), answer_tokens(gold)
    same = sum((Counter(pred) & Counter(truth)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def partial_f1(prediction: str, gold: str) -> float:
    """Category 1: each comma-separated gold part is matched by its best predicted part."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def says_unavailable(prediction: str) -> bool:
    """The official check looks for 'no information available' or 'not mentioned'; every system here
    is told to reply "I don't know", so that (and the phrasings `says_unknown` knows) counts too."""
    low = prediction.lower()
    return "no information available" in low or "not mentioned" in low or says_unknown(prediction)


def locomo_f1(prediction: str, gold: str, category: int) -> float:
    if category == 5:
        return 1.0 if says_unavailable(prediction) else 0.0
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return partial_f1(prediction, gold)
    return token_f1(prediction, gold)


def bleu1(prediction: str, gold: str) -> float:
    """Clipped unigram precision times the brevity penalty, on normalised (unstemmed) tokens."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    precision = clipped / len(pred)
    brevity = 1.0 if len(pred) > len(ref) else pow(2.718281828459045, 1 - len(ref) / len(pred))
    return brevity * precision


def rouge_l(prediction: str, gold: str) -> float:
    """ROUGE-L F1: the longest common subsequence of normalised tokens."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return 0.0
    prev = [0] * (len(ref) + 1)
    for p in pred:
        row = [0]
        for j, r in enumerate(ref, start=1):
            row.append(prev[j - 1] + 1 if p == r else max(prev[j], row[j - 1]))
        prev = row
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(pred), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class AnswerScore:
    f1: float
    bleu1: float
    rouge_l: float


def score_answer(prediction: str, gold: str, category: int) -> AnswerScore:
    if category == 5:
        # The gold "answer" of an adversarial question is the trap, not a reference text.
        hit = locomo_f1(prediction, gold, 5)
        return AnswerScore(hit, hit, hit)
    return AnswerScore(locomo_f1(prediction, gold, category), bleu1(prediction, gold), rouge_l(prediction, gold))


def score_temporal_date(prediction: str | None, gold: str, category: int, said_at: float) -> DateScore:
    """Date accuracy of a temporal answer, its dates counted from `said_at` (when the evidence was
    said); other categories are not date-scored."""
    if category != TEMPORAL:
        return DateScore(None, None)
    return score_date(prediction, gold, said_at)
