"""The local language model through llama-cpp-python: the bundled SmolLM2 GGUF or any GGUF the user picks.

Three things make the first token come sooner on a CPU (figures in docs/benchmarks.md, "Chat"):

- **A fast copy of the bundled model.** Prompt processing speed depends on the weight type far more than on size.
  The bundled Q4_1 file is re-typed once with llama.cpp's own quantizer (BF16 on CPUs with AVX512_BF16, else F16)
  into the models folder. The copy is written under a temporary name and renamed when complete, so a killed
  conversion never leaves a half file that is used; any problem falls back to the original file.
- **Reuse of the evaluated prefix.** One ``Llama`` object keeps its KV cache between questions and re-evaluates
  only what differs from the previous prompt, so the fixed system prompt (and the earlier turns of a chat) are
  computed once. ``LocalLLM.prime`` evaluates the system prompt at warm-up.
- **Batch sizes and threads** measured on the target machine (``N_BATCH``, ``N_UBATCH``).

``LLMProvider`` loads the model once, in the background, and hands it out; ``LocalLLM.lock`` serialises use.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localrag.core import paths
from localrag.core.config import Settings
from localrag.core.embed import model_files
from localrag.core.errors import KnownError, ModelMissing
from localrag.core.progress import CancelToken

# llama.cpp's CPU threads meet at OpenMP barriers after every operation. With the default (spinning) wait policy,
# a thread that the OS has descheduled — because ingestion, the embedding model or another program is using a
# core — stalls the others: measured here, prompt processing 6x and generation 10x slower than with one thread.
# Waiting passively costs nothing measurable on an idle machine. Set before llama.cpp (and its libgomp) loads;
# an explicit OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

log = logging.getLogger("localrag.llm")
llama_log = logging.getLogger("localrag.llm.llama_cpp")

# Logical and physical batch sizes for prompt processing (measured, docs/benchmarks.md "Chat").
N_BATCH = 512
N_UBATCH = 256
# How long a leftover ``*.partial`` conversion file is kept before a new conversion removes it.
_STALE_PARTIAL_S = 3600
ZERO_WIDTH_SPACE = "\u200b"


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
    from llama_cpp import llama_cpp  # the module llama.py resolves the defaults from

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


_log_callback: Any = None


def _route_llama_log() -> None:
    """Send llama.cpp's own messages (it writes some to stderr even when not verbose) to our log instead."""
    global _log_callback
    if _log_callback is not None:
        return
    import llama_cpp

    def callback(_level: int, text: bytes, _data: object) -> None:
        message = text.decode("utf-8", "replace").rstrip()
        if message:  # failures reach the caller as exceptions; the rest is detail
            llama_log.debug("%s", message)

    _log_callback = llama_cpp.llama_log_callback(callback)
    llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))


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


# -- the fast copy -----------------------------------------------------------------------------------------------


def cpu_features() -> set[str]:
    """The CPU features llama.cpp reports as present, e.g. ``{"AVX2", "AVX512_BF16"}``."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    found = set()
    for part in info.replace("\n", "|").split("|"):
        name, _, value = part.partition("=")
        if value.strip() == "1":
            found.add(name.split(":")[-1].strip())
    return found


def fast_copy_type() -> str:
    """The weight type that processes prompts fastest on this CPU: ``bf16`` with native BF16 dot products,
    else ``f16``."""
    return "bf16" if "AVX512_BF16" in cpu_features() else "f16"


def _ftype(kind: str) -> int:
    import llama_cpp

    return {
        "bf16": llama_cpp.LLAMA_FTYPE_MOSTLY_BF16,
        "f16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
        "q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
    }[kind]


def fast_copy_path(source: Path, kind: str) -> Path:
    """Where the ``kind`` copy of ``source`` lives: named after the source and keyed by its size and mtime, so a
    changed source gets a new copy."""
    st = source.stat()
    key = hashlib.sha256(f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:12]
    return paths.models_dir() / f"{source.stem}.{kind}.{key}.gguf"


def _is_gguf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False


def ensure_fast_copy(source: Path, kind: str | None = None, *, threads: int = 0) -> Path:
    """The fast copy of ``source``, converting it first if it is not there yet (about a second for the bundled
    model). Safe against concurrent and killed conversions: each writes its own ``*.partial`` file and renames it
    into place only when the quantizer succeeded.

    Raises:
        ModelMissing: the conversion failed (the caller loads the original instead).
    """
    import llama_cpp

    kind = kind or fast_copy_type()
    dest = fast_copy_path(source, kind)
    if dest.exists() and _is_gguf(dest):
        return dest
    _remove_stale_partials(dest.parent)
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.{threading.get_ident()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _ftype(kind)
    params.allow_requantize = True
    params.nthread = threads or max(1, os.cpu_count() or 1)
    started = time.monotonic()
    try:
        with _quiet_stderr():
            rc = llama_cpp.llama_model_quantize(
                str(source).encode(), str(partial).encode(), ctypes.byref(params)
            )
        if rc != 0 or not _is_gguf(partial):
            raise ModelMissing(f"Converting {source.name} to {kind} failed (code {rc}).")
        os.replace(partial, dest)
    except OSError as exc:
        raise ModelMissing(f"Cannot write the converted model to {dest.parent}: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()
    log.info("converted %s to %s in %.1f s: %s", source.name, kind, time.monotonic() - started, dest)
    _remove_older_copies(dest)
    return dest


def _remove_stale_partials(folder: Path) -> None:
    now = time.time()
    for p in folder.glob("*.partial"):
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > _STALE_PARTIAL_S:
                p.unlink()


def _remove_older_copies(dest: Path) -> None:
    """Copies of an earlier version of the same source (same stem and type, another key)."""
    stem, kind = dest.name.split(".")[0], dest.name.split(".")[-3]
    for p in dest.parent.glob(f"{stem}.{kind}.*.gguf"):
        if p != dest:
            with contextlib.suppress(OSError):
                p.unlink()


# -- the model ---------------------------------------------------------------------------------------------------


@dataclass
class GenerationStats:
    """What one generation cost. Times in seconds."""

    prompt_tokens: int = 0
    cached_tokens: int = 0  # of the prompt, reused from the previous one
    prompt_s: float = 0.0  # from the call to the first token: prompt processing plus the first sample
    tokens: int = 0
    generation_s: float = 0.0  # from the first token to the last
    cancelled: bool = False

    @property
    def tokens_per_s(self) -> float:
        return (self.tokens - 1) / self.generation_s if self.tokens > 1 and self.generation_s > 0 else 0.0


@dataclass
class LLMOptions:
    """How a model is loaded (everything but the file)."""

    n_ctx: int = 4096
    threads: int = 0
    n_batch: int = N_BATCH
    n_ubatch: int = N_UBATCH
    flash_attn: bool = False


class LocalLLM:
    """A loaded GGUF model with its chat template.

    Not thread-safe: hold ``lock`` around ``prime``/``stream`` when several threads share one model.

    Args:
        path: the GGUF file.
        n_ctx: context window in tokens.
        threads: CPU threads for prompt processing and generation (0: one per core).
        source: the file ``path`` was converted from, if it is a fast copy (shown to the user instead).
    """

    def __init__(
        self,
        path: Path,
        *,
        n_ctx: int = 4096,
        threads: int = 0,
        n_batch: int = N_BATCH,
        n_ubatch: int = N_UBATCH,
        flash_attn: bool = False,
        source: Path | None = None,
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelMissing(f"llama-cpp-python is not installed: {exc}") from exc
        self.path = Path(path)
        self.source = Path(source) if source else self.path
        self.threads = threads or max(1, os.cpu_count() or 1)
        if not self.path.is_file():
            raise ModelMissing(f"The language model file {self.path} does not exist.")
        _route_llama_log()
        try:
            with _quiet_stderr(), _without_extra_buffer_types():
                self.llama = Llama(
                    model_path=str(self.path),
                    n_ctx=n_ctx,
                    n_threads=self.threads,
                    n_threads_batch=self.threads,
                    n_batch=n_batch,
                    n_ubatch=n_ubatch,
                    flash_attn=flash_attn,
                    verbose=False,
                )
        except Exception as exc:  # llama-cpp raises ValueError/RuntimeError on a bad file
            raise ModelMissing(f"Cannot load the language model {self.source.name}: {exc}") from exc
        self.n_ctx = self.llama.n_ctx()
        self.lock = threading.RLock()
        self.last_stats = GenerationStats()
        self._cancel: CancelToken | None = None
        import llama_cpp

        self._abort_cb = llama_cpp.ggml_abort_callback(self._should_abort)
        self._control_texts = self._find_control_texts()
        self._template, self._stop = self._chat_template()

    @property
    def name(self) -> str:
        return self.source.name

    # -- tokens --------------------------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """Tokens of plain text: special-token look-alikes in ``text`` stay plain text."""
        return list(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def detokenize(self, tokens: Sequence[int], *, special: bool = False) -> str:
        """The text of ``tokens``; control tokens are written out only with ``special``."""
        return self.llama.detokenize(list(tokens), special=special).decode("utf-8", "replace")

    def sanitize(self, text: str) -> str:
        """``text`` with any control-token spelling of this model (``<|im_start|>``...) broken by a zero-width
        space, so text from a document or a user can never open or close a chat turn."""
        for special in self._control_texts:
            if special in text:
                text = text.replace(special, special[0] + ZERO_WIDTH_SPACE + special[1:])
        return text

    def render(self, messages: list[dict[str, str]]) -> list[int]:
        """The prompt tokens of a conversation through the GGUF's chat template, ending with the assistant's
        turn opened. Message contents are sanitised first."""
        clean = [{"role": m["role"], "content": self.sanitize(m["content"])} for m in messages]
        text = self._template(clean)
        return list(self.llama.tokenize(text.encode("utf-8"), add_bos=self._add_bos, special=True))

    def count_prompt(self, messages: list[dict[str, str]]) -> int:
        return len(self.render(messages))

    # -- generation ----------------------------------------------------------------------------------------

    def prime(self, tokens: Sequence[int]) -> float:
        """Evaluate ``tokens`` now so the next prompt starting with them skips that work; returns seconds."""
        started = time.monotonic()
        with self.lock:
            prefix = self._cached_prefix(tokens)
            if prefix >= len(tokens):
                return 0.0
            self.llama._ctx.kv_cache_seq_rm(-1, prefix, -1)
            self.llama.n_tokens = prefix
            self.llama.eval(list(tokens)[prefix:])
        return time.monotonic() - started

    def stream(
        self,
        prompt: Sequence[int],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
        repeat_penalty: float = 1.1,
        stop: Sequence[str] = (),
        cancel: CancelToken | None = None,
    ) -> Iterator[str]:
        """Yield the answer to the prompt tokens piece by piece; stop early when ``cancel`` is set (also during
        prompt processing), at the end of the assistant's turn, or at a ``stop`` string. ``last_stats`` holds
        the timings afterwards."""
        prompt = list(prompt)
        stats = GenerationStats(prompt_tokens=len(prompt), cached_tokens=self._cached_prefix(prompt))
        self.last_stats = stats
        started = time.monotonic()
        first: float | None = None
        with self.lock, self._abortable(cancel):
            chunks: Any = self.llama.create_completion(
                prompt=prompt,
                max_tokens=max_tokens,
                temperature=temperature,
                repeat_penalty=repeat_penalty,
                stream=True,
                stop=[*self._stop, *stop],
            )
            try:
                for chunk in chunks:
                    if cancel is not None and cancel.cancelled:
                        stats.cancelled = True
                        break
                    piece = chunk["choices"][0].get("text") or ""
                    now = time.monotonic()
                    if first is None:
                        first = now
                        stats.prompt_s = now - started
                    stats.tokens += 1
                    stats.generation_s = now - first
                    if piece:
                        yield piece
            except RuntimeError:
                if cancel is not None and cancel.cancelled:  # llama_decode aborted by the callback
                    stats.cancelled = True
                    return
                raise
            finally:
                chunks.close()
        if first is None and not stats.cancelled:
            stats.prompt_s = time.monotonic() - started

    def stream_chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
        stop: list[str] | None = None,
        cancel: CancelToken | None = None,
    ) -> Iterator[str]:
        """Yield the answer to a conversation piece by piece, using the chat template stored in the GGUF."""
        yield from self.stream(
            self.render(messages),
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop or (),
            cancel=cancel,
        )

    # -- internals -----------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _abortable(self, cancel: CancelToken | None) -> Iterator[None]:
        """Let ``cancel`` interrupt llama_decode between graph nodes (a long prompt takes seconds)."""
        if cancel is None:
            yield
            return
        import llama_cpp

        self._cancel = cancel
        llama_cpp.llama_set_abort_callback(self.llama.ctx, self._abort_cb, None)
        try:
            yield
        finally:
            llama_cpp.llama_set_abort_callback(self.llama.ctx, llama_cpp.ggml_abort_callback(), None)
            self._cancel = None

    def _should_abort(self, _data: object) -> bool:
        cancel = self._cancel
        return cancel is not None and cancel.cancelled

    def _cached_prefix(self, tokens: Sequence[int]) -> int:
        n = 0
        if self.llama.n_tokens > 0:
            for a, b in zip(self.llama._input_ids, tokens):
                if a != b:
                    break
                n += 1
        return n

    def _find_control_texts(self) -> list[str]:
        import llama_cpp

        vocab = llama_cpp.llama_model_get_vocab(self.llama.model)
        flags = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
        texts = set()
        for i in range(self.llama.n_vocab()):
            if llama_cpp.llama_vocab_get_attr(vocab, i) & flags:
                text = self.llama._model.token_get_text(i)
                if len(text) > 1:
                    texts.add(text)
        return sorted(texts, key=len, reverse=True)

    def _chat_template(self) -> tuple[Callable[[list[dict[str, str]]], str], list[str]]:
        """The GGUF's own template (as llama-cpp-python renders it), else ChatML."""
        from llama_cpp import llama_chat_format

        eos_id, bos_id = self.llama.token_eos(), self.llama.token_bos()
        eos = self.llama._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = self.llama._model.token_get_text(bos_id) if bos_id != -1 else ""
        source = self.llama.metadata.get("tokenizer.chat_template")
        self._add_bos = False  # the template writes bos_token itself when it wants one
        if source:
            formatter = llama_chat_format.Jinja2ChatFormatter(template=source, eos_token=eos, bos_token=bos)

            def render(messages: list[dict[str, str]]) -> str:
                return formatter(messages=messages).prompt  # type: ignore[arg-type]

            return render, [eos] if eos else []
        log.info("%s has no chat template; using ChatML", self.name)
        self._add_bos = bos_id != -1 and self.llama._model.add_bos_token()

        def chatml(messages: list[dict[str, str]]) -> str:
            body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
            return body + "<|im_start|>assistant\n"

        return chatml, ["<|im_end|>"] + ([eos] if eos else [])


def load_llm(settings: Settings) -> LocalLLM:
    """Load the configured model: for the bundled one, its fast copy when ``settings.fast_llm_copy`` (converted
    on first use; the original when that fails).

    Raises:
        ModelMissing: the file is missing or llama.cpp cannot load it.
    """
    source = gguf_path(settings)
    if settings.fast_llm_copy and not settings.gguf_path:
        try:
            copy = ensure_fast_copy(source, threads=settings.thread_count)
            return LocalLLM(copy, source=source, n_ctx=settings.n_ctx, threads=settings.thread_count)
        except ModelMissing as exc:
            log.warning("using %s as shipped: %s", source.name, exc.message)
    return LocalLLM(source, n_ctx=settings.n_ctx, threads=settings.thread_count)


# -- loading in the background -----------------------------------------------------------------------------------


@dataclass
class ProviderState:
    """Where the model stands: ``idle``, ``loading``, ``ready`` or ``failed`` (with a message for the user)."""

    status: str = "idle"
    error: str = ""
    load_s: float = 0.0
    model: str = ""
    listeners: list[Callable[[ProviderState], None]] = field(default_factory=list, repr=False)


class LLMProvider:
    """Loads the language model once, off the caller's thread if asked, and hands it out.

    ``start()`` loads on a daemon thread (warm-up at start-up); ``load()`` loads on the calling thread (a GUI
    worker); ``get()`` waits for whichever is under way. A failed load stays failed until ``reload``.

    Args:
        settings: which file, context size and threads.
        loader: how to load (``load_llm``); tests pass a loader that fails.
    """

    def __init__(self, settings: Settings, loader: Callable[[Settings], LocalLLM] = load_llm) -> None:
        self.settings = settings
        self._loader = loader
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._llm: LocalLLM | None = None
        self._thread: threading.Thread | None = None
        self.state = ProviderState()

    @property
    def ready(self) -> bool:
        return self.state.status == "ready"

    @property
    def failed(self) -> bool:
        return self.state.status == "failed"

    def add_listener(self, callback: Callable[[ProviderState], None]) -> None:
        """Call ``callback(state)`` after each change, on the thread that made it (the GUI re-emits it as a
        signal)."""
        self.state.listeners.append(callback)

    def start(self) -> None:
        """Begin loading on a background thread, unless a load has begun already."""
        with self._lock:
            if self.state.status != "idle":
                return
            self.state.status = "loading"
            self._thread = threading.Thread(target=self._load, name="llm-load", daemon=True)
            self._thread.start()
        self._notify()

    def load(self) -> LocalLLM:
        """Load on this thread (or wait for the load under way) and return the model.

        Raises:
            ModelMissing: the model cannot be loaded.
        """
        with self._lock:
            mine = self.state.status == "idle"
            if mine:
                self.state.status = "loading"
        if mine:
            self._notify()
            self._load()
        return self.get()

    def get(self, cancel: CancelToken | None = None, timeout: float | None = None) -> LocalLLM:
        """The loaded model, waiting for the load under way (starting one if none has begun).

        Raises:
            ModelMissing: the load failed.
            Cancelled: ``cancel`` was set while waiting.
            TimeoutError: not loaded within ``timeout`` seconds.
        """
        self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done.wait(0.05):
            if cancel is not None:
                cancel.raise_if_cancelled()
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("The language model is still loading.")
        if self._llm is None:
            raise ModelMissing(self.state.error or "The language model is not loaded.")
        return self._llm

    @property
    def llm(self) -> LocalLLM | None:
        """The model if loaded, without waiting."""
        return self._llm

    def reload(self, settings: Settings | None = None) -> None:
        """Forget the model (another file was picked, or to retry after a failure); the next ``get`` or
        ``start`` loads again. The caller makes sure no generation runs."""
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if settings is not None:
                self.settings = settings
            self._llm = None
            self._done.clear()
            self.state.status = "idle"
            self.state.error = ""
        self._notify()

    def _load(self) -> None:
        started = time.monotonic()
        try:
            llm = self._loader(self.settings)
        except KnownError as exc:
            log.warning("the language model cannot be loaded: %s", exc.message)
            self._finish(None, exc.message)
        except Exception as exc:  # a bug or an unexpected llama.cpp failure: keep retrieval working
            log.exception("loading the language model failed")
            self._finish(None, f"The language model cannot be loaded: {exc}")
        else:
            self.state.load_s = time.monotonic() - started
            self.state.model = llm.name
            self._finish(llm, "")

    def _finish(self, llm: LocalLLM | None, error: str) -> None:
        with self._lock:
            self._llm = llm
            self.state.error = error
            self.state.status = "ready" if llm is not None else "failed"
            self._done.set()
        self._notify()

    def _notify(self) -> None:
        for callback in list(self.state.listeners):
            try:
                callback(self.state)
            except Exception:  # a listener's bug must not break loading
                log.exception("LLM state listener failed")
