"""Streamed responses: newline-delimited JSON, one object per line, each with a "type"."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

from ...errors import AssistantError
from ...records import Answer
from ...wire import to_json

NDJSON = "application/x-ndjson"


def line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")


def answer_lines(items: Iterator[str | Answer]) -> Iterator[bytes]:
    """An answer stream as NDJSON: tokens, then the answer with its evidence (or an error line)."""
    try:
        for item in items:
            if isinstance(item, Answer):
                # Times to a tenth of a millisecond: finer is noise.
                shown = dataclasses.replace(
                    item, retrieval_ms=round(item.retrieval_ms, 1), answer_ms=round(item.answer_ms, 1)
                )
                yield line({"type": "answer", **to_json(shown)})
            else:
                yield line({"type": "token", "text": item})
    except AssistantError as exc:
        yield line({"type": "error", "error": str(exc)})
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()  # releases the LLM if the client went away mid-answer
