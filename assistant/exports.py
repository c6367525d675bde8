"""Writing an export file whole or not at all, as private as the memory it comes from."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import InputError


def write_atomically(path: Path, chunks: Iterator[str]) -> int:
    """Write to a temporary file beside `path`, fsync, then rename: a failure leaves nothing behind."""
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{path}: cannot write the export: {directory} is not a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the export: {exc.strerror}") from None
    size = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for chunk in chunks:
                fh.write(chunk)
                size += len(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)  # a memory export is as private as the memory
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write the export: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return size
