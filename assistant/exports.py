"""Writing an export file whole or not at all, as private as the memory it comes from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .atomic import atomic_text
from .errors import InputError

# A memory export is as private as the memory.
PRIVATE = 0o600


def write_atomically(path: Path, chunks: Iterator[str]) -> int:
    """Write `chunks` to `path` (see `atomic.py`): a failure leaves nothing behind. Returns the characters written."""
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{path}: cannot write the export: {directory} is not a directory")
    size = 0
    try:
        with atomic_text(path, permissions=PRIVATE) as fh:
            for chunk in chunks:
                fh.write(chunk)
                size += len(chunk)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the export: {exc.strerror or exc}") from None
    return size
