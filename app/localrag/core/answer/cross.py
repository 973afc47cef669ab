"""The cross-encoder: the question and a candidate span read together, scored for how well the span answers.

The reader (``reader``) scores each candidate from features of the span and of the question taken apart; the
embedding model compares their vectors, each made alone. This model reads the question and the span as one
input (MiniLM, fine-tuned to pick the answering span among a question's candidates on the tuning halves'
questions; docs/benchmarks.md, "The cross-encoder"), so it sees which words of the span answer which of the
question. It reorders the reader's best ``RERANK`` spans: each one's log-odds gains ``WEIGHT`` times its
score's z-score among them. Whether the documents answer at all is decided before, from the reader's own
probabilities, so the same questions are declined with it or without it.

The model ships as ``resources/reader/cross_encoder.onnx`` (its matrix products in int8: weights of 7 bits
with a scale per column, ``eval/cross_fit.int8_model``) and reads the embedding model's tokenizer. Without the
file, or when it fails, the reader's order stands and the answer says nothing of it: it is the order of the
same spans that changes.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from localrag.core import paths
from localrag.core.answer.reader import logistic

log = logging.getLogger(__name__)

# How many of the reader's best spans the model reads, and how much its z-score among them adds to each one's
# log-odds. Its cost grows with the spans (on two AVX-512 cores about 4 ms each); six instead of eight
# answered 8 fewer of 1,208 questions through the app, and four or five did worse in replays
# (docs/benchmarks.md).
RERANK = 8
WEIGHT = 0.5
# The question and the span together, in word pieces (the span is cut, and a very long question too).
MAX_TOKENS = 96
# Each pair is read alone: the shipped model's products are int8, the word-piece vectors quantized as it runs
# with one scale for everything in the run, so pairs read together would change each other's scores (by up
# to a quarter). The pairs are shared among threads of one-thread runs, the longest first: eight spans took
# 33–36 ms p50 on two threads against 44–49 one after the other on a session of two threads (2 AVX-512 cores;
# runs of four took 36–48 but scored pairs by their company; the float model before 81–114;
# docs/benchmarks.md).
THREADS = max(1, min(4, os.cpu_count() or 1))


class CrossEncoder:
    """An ONNX cross-encoder (inputs ``input_ids``, ``attention_mask``, ``token_type_ids``; output one score
    per pair) and its tokenizer."""

    def __init__(self, graph: Path, tokenizer: Path) -> None:
        import onnxruntime as ort

        self.tokenizer = pair_tokenizer(tokenizer)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # Tables stored as int8 (the word and position tables; an older model's every matrix) are made float
        # once, when the session opens (onnxruntime would otherwise keep the DequantizeLinear nodes and run
        # them with every question: 120 ms instead of 70 for eight spans of an older, float model).
        options.add_session_config_entry("session.disable_quant_qdq", "1")
        options.enable_cpu_mem_arena = False
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="cross-encoder")

    def scores(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """One score per text: the higher, the likelier it answers ``question``."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        encodings = self.tokenizer.encode_batch([(question, t) for t in texts])
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        out = np.zeros(len(texts), dtype=np.float32)

        def read(share: list[int]) -> None:
            for i in share:
                ids, mask, types = pair_arrays([encodings[i]])
                feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
                out[i] = float(np.asarray(self.session.run(None, feeds)[0]).reshape(-1)[0])

        shares = [order[k::THREADS] for k in range(min(THREADS, len(order)))]
        for done in [self._pool.submit(read, share) for share in shares]:
            done.result()
        return out


def pair_tokenizer(path: Path) -> Any:
    """The embedding model's tokenizer as the cross-encoder reads with it, in training and in the app: no
    padding (its file pads every input to 128), and the pair cut at ``MAX_TOKENS``, the longer of the two
    first (the span, unless the question alone is longer than the input: then both are; cutting only the span
    fails on such a question)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS, strategy="longest_first")
    return tokenizer


def pair_arrays(encodings: Sequence[Any]) -> tuple[np.ndarray, ...]:
    """The model's inputs for encoded pairs (the question with a text each): word-piece ids, attention mask
    and segment ids, padded with zeros to the longest pair."""
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask, types = np.zeros_like(ids), np.zeros_like(ids)
    for i, e in enumerate(encodings):
        n = len(e.ids)
        ids[i, :n], mask[i, :n], types[i, :n] = e.ids, 1, e.type_ids
    return ids, mask, types


def model_file() -> Path:
    return paths.resources_dir() / "reader" / "cross_encoder.onnx"


_lock = threading.Lock()


@cache
def _shared() -> CrossEncoder | None:
    from localrag.core.embed.model_files import default_embedding_files

    graph = model_file()
    if not graph.exists():
        log.warning("no cross-encoder at %s: the reader's order stands", graph)
        return None
    try:
        return CrossEncoder(graph, default_embedding_files().tokenizer)
    except Exception as exc:  # a damaged file or a missing tokenizer: answers go on without it
        log.warning("the cross-encoder did not load (%s): the reader's order stands", exc)
        return None


def shared() -> CrossEncoder | None:
    """The process's cross-encoder, loaded at first use (``None`` when it cannot be)."""
    with _lock:
        return _shared()


def rerank(question: str, ranked: Sequence[Any], model: CrossEncoder | None = None) -> bool:
    """Reorder the first ``RERANK`` of ``ranked`` (candidates, best first, each with ``score``, a probability,
    and ``span.text``): each gets ``features["cross"]`` (the model's score) and a score whose log-odds gain
    ``WEIGHT`` times that score's z-score among them. Returns whether the model read them."""
    top = list(ranked[:RERANK])
    model = model if model is not None else shared()
    if model is None or len(top) < 2:
        return False
    try:
        raw = model.scores(question, [c.span.text for c in top])
    except Exception as exc:  # never lose an answer to the reordering of its spans
        log.warning("the cross-encoder failed (%s): the reader's order stands", exc)
        return False
    spread = float(raw.std()) or 1.0
    for c, s in zip(top, raw, strict=True):
        c.features["cross"] = float(s)
        p = min(max(c.score, 1e-6), 1.0 - 1e-6)
        c.score = logistic(math.log(p / (1.0 - p)) + WEIGHT * (float(s) - float(raw.mean())) / spread)
    return True
