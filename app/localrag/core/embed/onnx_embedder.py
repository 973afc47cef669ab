"""A sentence embedder on onnxruntime with the model's own tokenizer.

The shipped MiniLM ``tokenizer.json`` pads and truncates to 128 by itself; both are turned off here so that
token counts are true, each batch is padded only to its longest text, and mean pooling uses the attention
mask. A ligature reads as its letters (``ligatures_as_letters``): the tokenizer, which counts, cuts and
embeds, sees "eﬀect" as "effect", and its offsets still point into the text as written.

The session's threads follow the machine's load unless a count is given (``core/embed/threads.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from localrag.core.embed.model_files import EmbeddingModelFiles
from localrag.core.embed.threads import SessionThreads, ThreadFit, default_threads
from localrag.core.errors import ModelMissing
from localrag.core.text import glyphs

log = logging.getLogger("localrag.embed")

# all-MiniLM-L6-v2 has 512 positions but was trained on 128 word pieces; past 256 quality falls off.
DEFAULT_MAX_TOKENS = 256


class OnnxEmbedder:
    """Embeds texts into L2-normalised vectors.

    Args:
        files: the model graph and tokenizer.
        threads: onnxruntime intra-op threads, spinning; 0: as many, spinning or not, as the machine's load
            leaves room for, looked at again as it changes (``fit_to_machine``). ``session_threads`` says
            what the session runs now.
        max_tokens: the longest input in word pieces, special tokens included. Longer inputs are refused
            here: every caller sizes its texts first with ``core.embed.sizing.fit_to_input`` (the chunker
            sizes chunks so that nothing of them is cut).
        fit: what reads the machine's load when ``threads`` is 0 (a ``ThreadFit`` of its own unless given).
    """

    def __init__(
        self,
        files: EmbeddingModelFiles,
        threads: int = 0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        *,
        fit: ThreadFit | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        # Watching the load from before the model loads: the first look.
        self._fit = None if threads else (fit or ThreadFit())
        self.files = files
        self.name = files.name
        self.max_tokens = max_tokens
        try:
            self.tokenizer = Tokenizer.from_file(str(files.tokenizer))
        except Exception as exc:  # tokenizers raises plain Exception
            raise ModelMissing(f"Cannot read the tokenizer {files.tokenizer}: {exc}") from exc
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.tokenizer.normalizer = ligatures_as_letters(self.tokenizer.normalizer)
        self._lock = threading.Lock()
        self._open_session(self._fit.current if self._fit else SessionThreads(threads, threads > 1))
        self.dimension = int(self.embed(["dimension probe"]).shape[1])
        self.fit_to_machine(now=True)

    def sibling(self, threads: int) -> OnnxEmbedder:
        """The same model in a session of its own with ``threads`` intra-op threads: it runs at the same time
        as this one (a query while an ingestion batch is being embedded)."""
        twin = object.__new__(OnnxEmbedder)
        twin.files, twin.name, twin.max_tokens = self.files, self.name, self.max_tokens
        twin.tokenizer = self.tokenizer
        twin._lock, twin._fit = threading.Lock(), None
        twin._open_session(SessionThreads(threads, threads > 1))
        twin.dimension = self.dimension
        return twin

    def _open_session(self, threads: SessionThreads) -> None:
        self.session = self._new_session(threads)
        self.session_threads = threads
        self._inputs = {i.name for i in self.session.get_inputs()}

    def _new_session(self, threads: SessionThreads) -> Any:
        import onnxruntime as ort

        files = self.files
        options = ort.SessionOptions()
        if threads.threads != default_threads() or not threads.spinning:
            options.intra_op_num_threads = threads.threads  # else onnxruntime's default, as always
        if not threads.spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        # Batches come in every shape; a growing arena kept each one's buffers (over 1 GB seen on a manual).
        options.enable_cpu_mem_arena = False
        try:
            return ort.InferenceSession(str(files.onnx), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ModelMissing(f"Cannot load the embedding model {files.onnx}: {exc}") from exc

    def fit_to_machine(self, now: bool = False) -> SessionThreads:
        """Reopen the session with other threads when the machine's load since the last look calls for them
        (``threads.ThreadFit``: every ``DECIDE_EVERY_S``, or ``now``). A session that fails to open leaves
        the current one in place. Returns what the session runs."""
        fit = self._fit
        if fit is None or not (now or fit.due()):
            return self.session_threads
        with self._lock:
            if not (now or fit.due()):  # another thread looked meanwhile
                return self.session_threads
            wanted = fit.look()
            if wanted != self.session_threads:
                try:
                    self.session = self._new_session(wanted)
                except ModelMissing as exc:
                    log.warning("embedding model kept on %s: %s", self.session_threads, exc)
                    return self.session_threads
                log.info(
                    "embedding model on %d thread(s), %s: %.1f cores busy with other work",
                    wanted.threads,
                    "spinning" if wanted.spinning else "not spinning",
                    fit.watch.busy_cores or 0.0,
                )
                self.session_threads = wanted
            return self.session_threads

    # -- tokens ----------------------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Word pieces including the special tokens, exactly as the model would see them."""
        return len(self.tokenizer.encode(text).ids)

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts)]

    # -- vectors ---------------------------------------------------------------------------------------------

    def embed(self, texts: list[str], batch_size: int = 16) -> np.ndarray:
        """Vectors for ``texts`` in their order, shape (len(texts), dimension), float32, unit length.

        Texts are embedded in batches of similar length (at most ``batch_size``, the longest at most half
        again as long as the shortest) so that padding costs little: a batch of short sentences and one long
        one would pay for the long one in every row. Long texts go a few at a time (``RUN_WORD_PIECES``).

        Raises:
            ValueError: a text is longer than ``max_tokens``.
        """
        if not texts:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        self.fit_to_machine()
        encodings = self.tokenizer.encode_batch(list(texts))
        too_long = [i for i, e in enumerate(encodings) if len(e.ids) > self.max_tokens]
        if too_long:
            raise ValueError(
                f"{len(too_long)} text(s) exceed the embedding model's {self.max_tokens}-token input "
                f"(first: {len(encodings[too_long[0]].ids)} tokens); chunk them first"
            )
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out: np.ndarray | None = None
        for idx in _similar_lengths(order, [len(e.ids) for e in encodings], batch_size):
            vecs = self._run([encodings[i] for i in idx])
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
        assert out is not None
        return out

    def _run(self, encodings: list) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = 1
            types[row, :n] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = types
        with self._lock:
            hidden = self.session.run(None, feeds)[0]
        if hidden.ndim == 2:  # a graph that already pools
            pooled = hidden
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def load_embedder(model_dir: str | Path | None = None, threads: int = 0) -> OnnxEmbedder:
    """The configured embedding model, or the bundled one when ``model_dir`` is empty."""
    from localrag.core.embed import model_files

    files = (
        model_files.embedding_files_from_dir(Path(model_dir))
        if model_dir
        else model_files.default_embedding_files()
    )
    return OnnxEmbedder(files, threads=threads)


def ligatures_as_letters(normalizer: Any) -> Any:
    """A tokenizer normalizer that replaces each ligature (``glyphs.LIGATURES``) by its letters, then does
    what ``normalizer`` (the model's own, or None) does: the model's vocabulary knows "fi", not "ﬁ"."""
    from tokenizers import normalizers

    replace = [normalizers.Replace(ligature, letters) for ligature, letters in glyphs.LIGATURES.items()]
    return normalizers.Sequence([*replace, normalizer] if normalizer is not None else replace)


# The word pieces of one run of the model, at most (a single longer text runs alone): the attention's working
# set grows with rows × width², and past the CPU's caches a run slows down. On a 2-core AVX2 CPU (512 KB of L2
# a core) 16 texts of 256 word pieces ran at 2,307 word pieces/s, one at a time at 3,743; 8 of 64 at 4,859
# (docs/benchmarks.md, "Ingestion": "On an AVX2-only CPU: fewer texts per run of the model").
RUN_WORD_PIECES = 400


def texts_per_run(width: int, most: int) -> int:
    """How many texts of ``width`` word pieces one run of the model takes: at most ``most``, and no more than
    ``RUN_WORD_PIECES`` word pieces (one, however long)."""
    return max(1, min(most, RUN_WORD_PIECES // width))


def _similar_lengths(order: list[int], lengths: list[int], batch_size: int) -> Iterator[list[int]]:
    """``order`` (indices sorted by length) cut into batches of at most ``batch_size`` whose longest text is
    at most 1.5 times its shortest, and that hold at most ``RUN_WORD_PIECES`` word pieces when padded."""
    batch: list[int] = []
    for i in order:
        full = len(batch) >= texts_per_run(lengths[i], batch_size)
        if batch and (full or lengths[i] > 1.5 * lengths[batch[0]]):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch
