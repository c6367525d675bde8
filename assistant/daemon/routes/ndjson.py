"""Streamed responses: newline-delimited JSON, one object per line, each with a "type"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ...errors import AssistantError
from ...records import Answer
from ..converters import evidence_out, recall_filter

NDJSON = "application/x-ndjson"


def line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")


def answer_lines(items: Iterator[str | Answer]) -> Iterator[bytes]:
    """An answer stream as NDJSON: tokens, then the answer with its evidence (or an error line)."""
    try:
        for item in items:
            if isinstance(item, Answer):
                yield line(
                    {
                        "type": "answer",
                        "text": item.text,
                        "knows": item.knows,
                        "evidence": [evidence_out(e) for e in item.evidence],
                        "context_tokens": item.context_tokens,
                        "retrieval_ms": round(item.retrieval_ms, 1),
                        "answer_ms": round(item.answer_ms, 1),
                        # What the recall was limited to, the bounds read from the question included.
                        "filter": recall_filter(item.retrieval.filter).model_dump() if item.retrieval else None,
                    }
                )
            else:
                yield line({"type": "token", "text": item})
    except AssistantError as exc:
        yield line({"type": "error", "error": str(exc)})
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()  # releases the LLM if the client went away mid-answer
