"""The local language model through llama-cpp-python: the bundled SmolLM2 GGUF or any GGUF the user picks."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localrag.core.config import Settings
from localrag.core.embed import model_files
from localrag.core.errors import ModelMissing

log = logging.getLogger("localrag.llm")


def gguf_path(settings: Settings) -> Path:
    """The GGUF to load: the user's choice, else the bundled model."""
    if settings.gguf_path:
        path = Path(settings.gguf_path).expanduser()
        if not path.is_file():
            raise ModelMissing(f"The language model file {path} does not exist.")
        return path
    return model_files.default_gguf()


_params_lock = threading.Lock()


@contextlib.contextmanager
def _without_extra_buffer_types() -> Iterator[None]:
    """Load with llama.cpp's CPU "extra" weight buffers (AMX/repacked kernels) turned off.

    On CPUs with AMX, batched decoding of Q4_1 weights through those kernels crashes the process (measured with
    llama-cpp-python 0.3.36: any prompt longer than one token). llama-cpp-python does not expose the switch, so
    the default model parameters are wrapped while one model loads.
    """
    import llama_cpp.llama_cpp as llama_cpp  # the module llama.py resolves the defaults from

    with _params_lock:
        original = llama_cpp.llama_model_default_params

        def params():  # type: ignore[no-untyped-def]
            p = original()
            p.use_extra_bufts = False
            return p

        llama_cpp.llama_model_default_params = params
        try:
            yield
        finally:
            llama_cpp.llama_model_default_params = original


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
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


class LocalLLM:
    """A loaded GGUF model.

    Args:
        path: the GGUF file.
        n_ctx: context window in tokens.
        threads: CPU threads for prompt processing and generation.
    """

    def __init__(self, path: Path, *, n_ctx: int = 4096, threads: int = 0) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelMissing(f"llama-cpp-python is not installed: {exc}") from exc
        self.path = Path(path)
        threads = threads or max(1, os.cpu_count() or 1)
        try:
            with _quiet_stderr(), _without_extra_buffer_types():
                self.llama = Llama(
                    model_path=str(self.path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                    n_batch=512, verbose=False,
                )
        except Exception as exc:  # llama-cpp raises ValueError/RuntimeError on a bad file
            raise ModelMissing(f"Cannot load the language model {self.path.name}: {exc}") from exc
        self.n_ctx = self.llama.n_ctx()

    def count_tokens(self, text: str) -> int:
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def stream_chat(self, messages: list[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.2,
                    stop: list[str] | None = None) -> Iterator[str]:
        """Yield the answer piece by piece, using the chat template stored in the GGUF."""
        chunks: Any = self.llama.create_chat_completion(
            messages=messages, max_tokens=max_tokens, temperature=temperature, stream=True, stop=stop,
        )
        for chunk in chunks:
            delta = chunk["choices"][0].get("delta", {})
            piece = delta.get("content")
            if piece:
                yield piece


def load_llm(settings: Settings) -> LocalLLM:
    return LocalLLM(gguf_path(settings), n_ctx=settings.n_ctx, threads=settings.thread_count)
