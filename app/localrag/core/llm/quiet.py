"""llama.cpp's own output: silenced on the terminal while a model loads, and its messages sent to our log."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
from collections.abc import Iterator
from typing import Any

from localrag.core.llm import openmp

llama_log = logging.getLogger("localrag.llm.llama_cpp")


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """llama.cpp prints its load log on fd 2; keep the terminal clean."""
    try:
        fd = os.dup(2)
    except OSError:
        yield
        return
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(fd, 2)
            os.close(fd)


_log_callback: Any = None


def route_llama_log() -> None:
    """Send llama.cpp's own messages (it writes some to stderr even when not verbose) to our log instead."""
    global _log_callback
    if _log_callback is not None:
        return
    openmp.configure()
    import llama_cpp

    def callback(_level: int, text: bytes, _data: object) -> None:
        message = text.decode("utf-8", "replace").rstrip()
        if message:  # failures reach the caller as exceptions; the rest is detail
            llama_log.debug("%s", message)

    _log_callback = llama_cpp.llama_log_callback(callback)
    llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
