"""SQLite storage with sqlite-vec vectors and in-process usearch indexes."""

from .store import Store

__all__ = ["Store"]
