"""The local language model through llama-cpp-python: the bundled SmolLM2 GGUF or any GGUF the user picks.

What makes the first token come sooner on a CPU (figures in docs/benchmarks.md, "Chat"):

- **A fast copy of the bundled model.** Prompt processing speed depends on the weight type far more than on
  size. The bundled Q4_1 file is re-typed once with llama.cpp's own quantizer into the models folder: to the
  type measured fastest on this machine (``tuning``: Q8_0, F16 or BF16; with it the attention kernel, batch
  size and thread counts), else Q8_0 (``fast_copy_type``). The copy is written under a temporary name and
  renamed when complete, so a killed conversion never leaves a half file that is used; any problem falls back
  to the original file.
- **Reuse of the evaluated prefix.** One ``Llama`` object keeps its KV cache between questions and
  re-evaluates only what differs from the previous prompt, so the fixed system prompt (and the earlier turns
  of a chat) are computed once. ``LocalLLM.prime`` evaluates the system prompt at warm-up, and
  ``LocalLLM.keep_prefix`` keeps its state on disk for the next start.
- **The best CPU kernels for this CPU**: one build holds llama.cpp's CPU kernels for several CPU families
  (AVX2, AVX-512, AVX-512 with VNNI and BF16, AMX); ``backends`` loads the one this CPU runs best.
- **AMX kernels** where the CPU has them and this build runs them (``extra_buffers``): half the CPU time of
  the prompt.
- **Flash attention.** At 1,200 tokens, attention (scores, softmax, weighted sum) is half of the prompt's work
  for this small model; llama.cpp's fused kernel does it in less time. It makes generation slower at long
  contexts (about 35 instead of 65 tokens/s on two cores, still several times reading speed): the wait before
  the answer starts is what a person notices.
- **Batch sizes, threads and OpenMP waiting** measured on the target machine (``N_BATCH``, ``N_UBATCH``,
  below).

``LLMProvider`` (``provider.py``) loads the model once, on the thread of its first caller (the GUI's
generation worker, or a thread of the command line's host), and hands it out; ``LocalLLM.lock`` serialises
use. No thread is started here. The prompt prefix's saved state is in ``kept_state.py``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localrag.core.config import Settings
from localrag.core.cores import CoreWatch
from localrag.core.embed import model_files
from localrag.core.errors import ModelMissing
from localrag.core.llm import kept_state, openmp
from localrag.core.llm.backends import CpuBackend, cpu_backend
from localrag.core.llm.extra_buffers import extra_buffer_types, extra_buffers_work
from localrag.core.llm.fastcopy import ensure_fast_copy, fast_copy_path, fast_copy_type
from localrag.core.llm.quiet import quiet_stderr, route_llama_log
from localrag.core.llm.tuning import Tuning, candidate_weights, remembered, thread_candidates, tune
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.llm")

# Logical and physical batch sizes for prompt processing (measured, docs/benchmarks.md "Chat").
N_BATCH = 512
N_UBATCH = 512
# Flash attention: a 1,200-token prompt 20-25 % sooner (1.9 -> 1.45 s with AMX kernels), generation at that
# context length half as fast (65 -> 35 tokens/s) with llama.cpp's CPU kernel for one token.
FLASH_ATTN = True
# Prompt batches after a cached prefix start at multiples of this many positions (``LocalLLM._align``): with
# flash attention, batches that start at such a position were measured faster than the same work shifted.
ALIGN = 256
ZERO_WIDTH_SPACE = "\u200b"
# A prompt starts from the kept prefix's saved state when it shares all of it but this many final tokens.
KEPT_SLACK = 8


def gguf_path(settings: Settings) -> Path:
    """The GGUF to load: the user's choice, else the bundled model."""
    if settings.gguf_path:
        path = Path(settings.gguf_path).expanduser()
        if not path.is_file():
            raise ModelMissing(f"The language model file {path} does not exist.")
        return path
    return model_files.default_gguf()


# -- the model -----------------------------------------------------------------------------------------------


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


class LocalLLM:
    """A loaded GGUF model with its chat template.

    Not thread-safe: hold ``lock`` around ``prime``/``stream`` when several threads share one model.

    Args:
        path: the GGUF file.
        n_ctx: context window in tokens.
        threads: CPU threads for generation (0: one per core).
        threads_batch: CPU threads for prompt processing (0: as ``threads``).
        n_batch, n_ubatch: logical and physical batch sizes for prompt processing.
        flash_attn, type_k, type_v: attention kernel and KV cache types (llama.cpp's ``GGML_TYPE_*``).
        extra_bufts: let llama.cpp repack weights for its AMX/repack kernels (off by default: ``load_llm``
            turns them on where ``extra_buffers.extra_buffers_work`` says this build runs them).
        source: the file ``path`` was converted from, if it is a fast copy (shown to the user instead).
        tuning: the measurement these settings came from (``load_llm``), if any.
    """

    def __init__(
        self,
        path: Path,
        *,
        n_ctx: int = 4096,
        threads: int = 0,
        threads_batch: int = 0,
        n_batch: int = N_BATCH,
        n_ubatch: int = N_UBATCH,
        flash_attn: bool = FLASH_ATTN,
        type_k: int | None = None,
        type_v: int | None = None,
        extra_bufts: bool = False,
        source: Path | None = None,
        tuning: Tuning | None = None,
    ) -> None:
        try:
            openmp.configure()
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelMissing(f"llama-cpp-python is not installed: {exc}") from exc
        self.path = Path(path)
        self.source = Path(source) if source else self.path
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.threads_batch = threads_batch or self.threads
        if not self.path.is_file():
            raise ModelMissing(f"The language model file {self.path} does not exist.")
        route_llama_log()
        self.backend: CpuBackend = cpu_backend()  # the CPU kernels must be loaded before the first model
        try:
            with quiet_stderr(), extra_buffer_types(extra_bufts):
                self.llama = Llama(
                    model_path=str(self.path),
                    n_ctx=n_ctx,
                    n_threads=self.threads,
                    n_threads_batch=self.threads_batch,
                    n_batch=n_batch,
                    n_ubatch=n_ubatch,
                    flash_attn=flash_attn,
                    type_k=type_k,
                    type_v=type_v,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:  # llama-cpp's answer to a bad or unreadable file
            raise ModelMissing(f"Cannot load the language model {self.source.name}: {exc}") from exc
        self.n_ctx = self.llama.n_ctx()
        self.extra_bufts = extra_bufts
        self.flash_attn = flash_attn
        self.n_ubatch = n_ubatch
        self.kv_types = (type_k, type_v)
        self.tuning = tuning
        self._kept: list[int] | None = None
        self.cores = CoreWatch(max(self.threads, self.threads_batch))
        self.cores.mark()
        self._threads_now = (self.threads, self.threads_batch)
        self.lock = threading.RLock()
        self.last_stats = GenerationStats()
        self._cancel: CancelToken | None = None
        openmp.configure()
        import llama_cpp

        self._abort_cb = llama_cpp.ggml_abort_callback(self._should_abort)
        self._control_texts = self._find_control_texts()
        self._template, self._stop = self._chat_template()

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def n_params(self) -> int:
        """The model's parameter count (what an answer may be trusted with depends on it)."""
        openmp.configure()
        import llama_cpp

        return int(llama_cpp.llama_model_n_params(self.llama.model))

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

    def prime(self, tokens: Sequence[int], cancel: CancelToken | None = None) -> float:
        """Evaluate ``tokens`` now so the next prompt starting with them skips that work; returns seconds.

        ``cancel`` stops the evaluation between two steps of the model; what was evaluated before stays
        cached.
        """
        started = time.monotonic()
        with self.lock, self._abortable(cancel), self._threads_for_load():
            self._start_from_kept(tokens)
            prefix = self._cached_prefix(tokens)
            if prefix >= len(tokens):
                return time.monotonic() - started
            try:
                self._evaluate(tokens, self._align(tokens, prefix), len(tokens))
            except RuntimeError:
                if cancel is None or not cancel.cancelled:
                    raise
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
        """Yield the answer to the prompt tokens piece by piece; stop early when ``cancel`` is set (also
        during prompt processing), at the end of the assistant's turn, or at a ``stop`` string. ``last_stats``
        holds the timings afterwards."""
        prompt = list(prompt)
        stats = GenerationStats(prompt_tokens=len(prompt))
        self.last_stats = stats
        started = time.monotonic()
        first: float | None = None
        with self.lock, self._abortable(cancel), self._threads_for_load():
            try:
                self._start_from_kept(prompt)
                stats.cached_tokens = self._cached_prefix(prompt)
                self._align(prompt, stats.cached_tokens)
            except RuntimeError:
                if cancel is not None and cancel.cancelled:  # llama_decode aborted by the callback
                    stats.cancelled = True
                    return
                raise
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

    def keep_prefix(self, tokens: Sequence[int]) -> None:
        """Keep the evaluated state of ``tokens`` (the fixed start of the app's prompts) on disk.

        From now on, a prompt on an empty cache that starts like ``tokens`` first takes their state from the
        cache folder (a few milliseconds) instead of evaluating them; when it is not there yet they are
        evaluated once and their state written. The file is keyed by the model file, the llama.cpp build and
        CPU kernels, the tokens and the settings that shape the state (context size, attention kernel,
        batch size, cache types, extra buffers), so any change writes a new one.
        """
        self._kept = list(tokens)

    # -- internals -----------------------------------------------------------------------------------------

    def _start_from_kept(self, prompt: Sequence[int]) -> None:
        """On an empty cache, begin with the kept prefix's state (from disk, or evaluated and saved) when
        ``prompt`` shares most of it (the kept prefix may end in a few tokens the prompt does not have)."""
        kept = self._kept
        if not kept or self.llama.n_tokens > 0:
            return
        shared = 0
        for a, b in zip(kept, prompt, strict=False):
            if a != b:
                break
            shared += 1
        if shared < max(1, len(kept) - KEPT_SLACK):
            return
        if kept_state.load(self, kept):
            return
        self._evaluate(kept, 0, len(kept))
        kept_state.save(self, kept)

    @contextlib.contextmanager
    def _abortable(self, cancel: CancelToken | None) -> Iterator[None]:
        """Let ``cancel`` interrupt llama_decode between graph nodes (a long prompt takes seconds)."""
        if cancel is None:
            yield
            return
        openmp.configure()
        import llama_cpp

        self._cancel = cancel
        llama_cpp.llama_set_abort_callback(self.llama.ctx, self._abort_cb, None)
        try:
            yield
        finally:
            llama_cpp.llama_set_abort_callback(self.llama.ctx, llama_cpp.ggml_abort_callback(), None)
            self._cancel = None

    @contextlib.contextmanager
    def _threads_for_load(self) -> Iterator[None]:
        """Run with one thread fewer while other work keeps a core busy (``cores``); note when the model
        stops."""
        openmp.configure()
        import llama_cpp

        n = self.cores.threads(self._threads_now[1])
        wanted = (min(self.threads, n), n)
        if wanted != self._threads_now:
            llama_cpp.llama_set_n_threads(self.llama.ctx, *wanted)
            self._threads_now = wanted
            log.debug(
                "language model on %d thread(s): %.1f cores busy with other work", n, self.cores.busy_cores
            )
        try:
            yield
        finally:
            self.cores.mark()

    def _evaluate(self, tokens: Sequence[int], start: int, end: int) -> None:
        """Evaluate ``tokens[start:end]`` after the cached ``tokens[:start]`` (whatever was cached after it
        goes)."""
        self.llama._ctx.kv_cache_seq_rm(-1, start, -1)
        self.llama.n_tokens = start
        self.llama.eval(list(tokens[start:end]))

    def _align(self, prompt: Sequence[int], cached: int) -> int:
        """After a cached prefix, evaluate up to the next multiple of ``ALIGN`` tokens first (returns where
        the cache now ends), so that the batches of the rest start at such a position too. Measured: 1,041 new
        tokens after the 159 of the system prompt took 1.59 s in batches starting at 159, 1.37 s this way, and
        all 1,200 from scratch 1.43 s."""
        edge = -(-cached // ALIGN) * ALIGN
        if 0 < cached < edge < len(prompt) - 1:
            self._evaluate(prompt, cached, edge)
            return edge
        return cached

    def _should_abort(self, _data: object) -> bool:
        cancel = self._cancel
        return cancel is not None and cancel.cancelled

    def _cached_prefix(self, tokens: Sequence[int]) -> int:
        n = 0
        if self.llama.n_tokens > 0:
            for a, b in zip(self.llama._input_ids, tokens, strict=False):
                if a != b:
                    break
                n += 1
        return n

    def _find_control_texts(self) -> list[str]:
        openmp.configure()
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
        openmp.configure()
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


def load_llm(settings: Settings, cancel: CancelToken | None = None) -> LocalLLM:
    """Load the configured model: for the bundled one, its fast copy when ``settings.fast_llm_copy``
    (converted on first use; the original when that fails), in the weight type, attention kernel, batch size
    and thread counts measured fastest here when ``settings.llm_tuning`` (``tuning``: once per model, build
    and CPU, about 20 s; threads the settings name are used as they are). Blocking; ``cancel`` stops it
    between steps (and ends the child processes that check the AMX kernels and measure).

    Raises:
        ModelMissing: the file is missing or llama.cpp cannot load it.
        Cancelled: ``cancel`` was set.
    """
    source = gguf_path(settings)
    threads = settings.thread_count
    if settings.fast_llm_copy and not settings.gguf_path:
        copy = None
        try:
            tuning = None
            if settings.llm_tuning:
                tuning = _tuning(source, threads, _other_threads(settings), cancel)
            copy = ensure_fast_copy(source, tuning.weights if tuning else None, threads=threads)
            extra = extra_buffers_work(copy, threads=threads, cancel=cancel)
            if cancel is not None:
                cancel.raise_if_cancelled()
            # Threads the user set are never measured against others (``_other_threads``): they stay.
            return LocalLLM(
                copy,
                source=source,
                n_ctx=settings.n_ctx,
                threads=(tuning.threads if tuning else 0) or threads,
                threads_batch=(tuning.threads_batch if tuning else 0) or threads,
                extra_bufts=extra,
                flash_attn=tuning.flash_attn if tuning else FLASH_ATTN,
                n_ubatch=tuning.n_ubatch if tuning else N_UBATCH,
                tuning=tuning,
            )
        except ModelMissing as exc:
            log.warning("using %s as shipped: %s", source.name, exc.message)
            if copy is not None:  # a copy that does not load is not kept for the next start
                with contextlib.suppress(OSError):
                    copy.unlink()
    extra = extra_buffers_work(source, threads=threads, cancel=cancel)
    if cancel is not None:
        cancel.raise_if_cancelled()
    return LocalLLM(source, n_ctx=settings.n_ctx, threads=threads, extra_bufts=extra)


def _tuning(source: Path, threads: int, other_threads: list[int], cancel: CancelToken | None) -> Tuning:
    """The tuning of the bundled model's fast copies on this machine (measured at the first call; the copies
    of the types not chosen are then removed)."""
    candidates = candidate_weights(cpu_backend().features)
    tuning = tune(
        source,
        candidates,
        threads=threads,
        defaults=_tuning_defaults(),
        other_threads=other_threads,
        cancel=cancel,
    )
    for weights in candidates:
        if weights != tuning.weights:
            with contextlib.suppress(OSError):
                fast_copy_path(source, weights).unlink()
    return tuning


def _tuning_defaults() -> Tuning:
    return Tuning(fast_copy_type(), FLASH_ATTN, N_UBATCH)


def _other_threads(settings: Settings) -> list[int]:
    """The thread counts to measure besides one per core: none when the settings name the threads."""
    return [] if settings.threads else thread_candidates(settings.thread_count)


def tuning_for(settings: Settings) -> Tuning | None:
    """How ``load_llm`` runs the model here, if it has been measured (for About and doctor; measures
    nothing)."""
    if not (settings.llm_tuning and settings.fast_llm_copy) or settings.gguf_path:
        return None
    candidates = candidate_weights(cpu_backend().features)
    return remembered(
        gguf_path(settings),
        candidates,
        threads=settings.thread_count,
        defaults=_tuning_defaults(),
        other_threads=_other_threads(settings),
    )
