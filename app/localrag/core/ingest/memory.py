"""Giving freed memory back to the system after a large document.

CPython returns freed objects to its allocator, and glibc's ``malloc`` keeps the freed pages of a large
document's tokens and texts mapped for reuse: the process stays as large as its peak until they are reused.
``malloc_trim(0)`` hands them back at once. Elsewhere (macOS, Windows, musl) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import sys

log = logging.getLogger("localrag.ingest")

_libc: ctypes.CDLL | None = None


def release_memory() -> bool:
    """Collect garbage and return freed heap pages to the system; whether glibc's ``malloc_trim`` ran."""
    global _libc
    gc.collect()
    if not sys.platform.startswith("linux"):
        return False
    try:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = _libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True
