"""Writing a file whole or not at all: a temporary file beside it, fsynced, then renamed over it.

A reader (or a crash) sees the old file or the new one, never half of one: the rename is atomic
within a directory, which is why the temporary file sits in the target's own directory. The
temporary name is `.NAME.RANDOM.tmp`, so whoever cleans up after a killed writer can find it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, BinaryIO, TextIO, cast


@contextmanager
def atomic_text(path: Path, *, permissions: int | None = None) -> Iterator[TextIO]:
    """A UTF-8 text file that becomes `path` when the block ends without an exception.

    `permissions`: the new file's mode, set before it takes the name; None leaves what the
    umask gives an ordinary new file.
    """
    with _replacing(path, "w", permissions) as fh:
        yield cast(TextIO, fh)


@contextmanager
def atomic_bytes(path: Path, *, permissions: int | None = None) -> Iterator[BinaryIO]:
    """The binary counterpart of `atomic_text`."""
    with _replacing(path, "wb", permissions) as fh:
        yield cast(BinaryIO, fh)


def write_text_atomically(path: Path, text: str, *, permissions: int | None = None) -> None:
    with atomic_text(path, permissions=permissions) as fh:
        fh.write(text)


def leftovers(path: Path) -> list[Path]:
    """The temporary files that writers of `path` killed midway left beside it."""
    return sorted(path.parent.glob(f".{path.name}.*.tmp"))


@contextmanager
def _replacing(path: Path, mode: str, permissions: int | None) -> Iterator[IO[str] | IO[bytes]]:
    fd, tmp = _create_beside(path, permissions)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if permissions is not None:
            os.chmod(tmp, permissions)  # exactly this mode, whatever the umask took away at creation
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create_beside(path: Path, permissions: int | None) -> tuple[int, Path]:
    # Not tempfile.mkstemp: it always creates 0600, and a file meant to be world-readable would
    # then be private until the chmod. Created with the final mode instead, a private file is
    # never readable by others, not even while it is being written.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666 if permissions is None else permissions), tmp
        except FileExistsError:
            continue
