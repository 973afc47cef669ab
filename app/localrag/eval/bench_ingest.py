"""``local-rag bench ingest DIR``: how fast files become searchable, and where the time goes.

The files are indexed into a throw-away embedded database with the real pipeline (through the process's
embedding worker, as the window and ``local-rag ingest`` do). Then the same texts — each chunk in its context
and its pieces — are embedded again by the model alone, in the same requests: the ratio of the two is the
pipeline's overhead over pure embedding (extraction, chunking and writing that did not overlap with the
model).

The report also gives the model's ceiling on the same word pieces (``ceiling``: batches of one width, no
padding) and the shares of it the pipeline and embedding alone reach. ``--onnx-options`` (no files) compares
the embedding session's threading instead: onnxruntime's default, the app's choice by the load, one thread,
no spinning; ``--run-shapes`` (no files) the model's rate by how many texts of a width one run holds.

``--first-hit WORDS``: while the files are indexed, a keyword search for ``WORDS`` runs every quarter of a
second on its own connection; the report says how many seconds after the start of the ingest (the drop) it
first found a passage, and in which document. ``--stop-after-hit`` pauses indexing then (nothing else is
measured).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from localrag.core.config import Settings
from localrag.core.embed.onnx_embedder import RUN_WORD_PIECES, texts_per_run
from localrag.core.embed.sizing import fit_to_input
from localrag.core.ingest import pieces
from localrag.core.ingest.pipeline import EMBED_BATCH, Ingestor
from localrag.core.library import Library
from localrag.core.retrieve import retrieve
from localrag.core.text import identity
from localrag.eval.beir import throwaway_store
from localrag.eval.machine import cpu_flags
from localrag.host.embedding import embedding_service


def peak_rss_mb() -> float:
    """This process's peak resident memory. On Linux from VmHWM: ru_maxrss survives exec, so a process
    started by a large one would report its parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20


FIRST_HIT_POLL_S = 0.25


def first_hit(library: Library, words: str, t0: float, done: threading.Event) -> dict[str, Any]:
    """Search ``words`` by keywords every ``FIRST_HIT_POLL_S`` until a passage is found (or ``done``): the
    seconds since ``t0`` and what was found."""
    while True:
        resp = retrieve(library, words, k=1, mode="keyword", route=False)
        if resp.results:
            r = resp.results[0]
            return {
                "seconds": round(time.monotonic() - t0, 2),
                "doc": r.file_name,
                "page": r.page_number,
                "keywords_only": bool(getattr(r, "keywords_only", False)),
            }
        if done.wait(FIRST_HIT_POLL_S):
            return {"seconds": None}


def bench_ingest(
    paths: list[Path], *, embed_only: bool = True, hit_words: str = "", stop_after_hit: bool = False
) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    with throwaway_store() as conninfo:
        library = Library(replace(Settings.load(), database_url=conninfo))
        library.open()
        _ = library.embedder  # load before the clock starts, as the app does at warm-up
        hit: dict[str, Any] = {}
        # Batches go through the process's embedding worker, as in the window and ``local-rag ingest``: the
        # next batch is embedded while the last one is written.
        with embedding_service(library), Ingestor(library) as ingestor:
            done = threading.Event()
            t0 = time.monotonic()

            def poll() -> None:
                hit.update(first_hit(library, hit_words, t0, done))
                if stop_after_hit:
                    ingestor.pause()

            poller = threading.Thread(target=poll, name="first-hit", daemon=True)
            if hit_words:
                poller.start()
            queued = ingestor.enqueue(paths)
            summary = ingestor.run()
            total = time.monotonic() - t0
            done.set()
            if hit_words:
                poller.join()
        if stop_after_hit:
            library.close()
            return {"files": len(queued), "first_keyword_hit": hit, "seconds": round(total, 2)}
        report: dict[str, Any] = {
            "files": len(queued),
            "ready": summary.ready,
            "failed": summary.failed,
            "pages": summary.pages,
            "chunks": summary.chunks,
            "embedding_tokens": summary.embedded_tokens,
            "pieces": summary.embedded_pieces,
            "seconds": round(total, 2),
            "pages_per_s": round(summary.pages / total, 1) if total else 0.0,
            "chunks_per_s": round(summary.chunks / total, 1) if total else 0.0,
            "tokens_per_s": round(summary.embedded_tokens / total, 1) if total else 0.0,
            "stage_seconds": {k: round(v, 2) for k, v in summary.stage_seconds.items()},
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }
        if hit_words:
            report["first_keyword_hit"] = hit
        if embed_only:
            alone = embedding_alone(library)
            report.update(alone)
            report["overhead_vs_embedding"] = round(total / alone["embed_only_seconds"] - 1, 3)
            report["word_pieces_per_s"] = round(alone["model_word_pieces"] / total, 1)
            report["share_of_ceiling"] = round(alone["ceiling"]["seconds"] / total, 3)
            report["embedding_alone_share_of_ceiling"] = round(
                alone["ceiling"]["seconds"] / alone["embed_only_seconds"], 3
            )
        report["load_average"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        report["cpu_flags"] = cpu_flags()
        library.close()
    return report


def embedding_alone(library: Library) -> dict[str, Any]:
    """Embed again what the pipeline embedded — each chunk in its context and its pieces, in the same
    requests (``EMBED_BATCH`` chunks and their pieces) — with the model alone; then the model's ceiling on
    the same word pieces: ``ceiling``."""
    embedder = library.embedder
    fit, count = identity.ContextFitter(embedder), pieces.token_counter(embedder)
    requests: list[list[str]] = []
    with library.connect() as conn:
        rows = conn.execute(
            "SELECT text, context, token_count FROM document_chunks ORDER BY doc_id, chunk_index"
        ).fetchall()
    for i in range(0, len(rows), EMBED_BATCH):
        batch = rows[i : i + EMBED_BATCH]
        texts = [identity.embedding_text(fit(context, n), text) for text, context, n in batch]
        texts += [p for text, _c, _n in batch for p in pieces.piece_texts(text, count)]
        requests.append(texts)
    t1 = time.monotonic()
    for texts in requests:
        embedder.embed(fit_to_input(embedder, texts))
    alone = time.monotonic() - t1
    t2 = time.monotonic()  # one tokenizing pass over the same texts (the embedding path makes two)
    lengths = [n for texts in requests for n in embedder.count_tokens_batch(texts)]
    tokenize = time.monotonic() - t2
    out: dict[str, Any] = {
        "embed_only_seconds": round(alone, 2),
        "model_word_pieces": sum(lengths),
        "model_texts": len(lengths),
        "embed_only_word_pieces_per_s": round(sum(lengths) / alone, 1) if alone else None,
        "tokenize_once_seconds": round(tokenize, 2),
    }
    out["ceiling"] = ceiling(embedder, lengths)
    return out


# Widths (word pieces) at which the model's own rate is measured for ``ceiling``, and the rows of each batch.
CEILING_WIDTHS = (16, 32, 64, 128, 192, 256)
CEILING_ROWS = 16
CEILING_SECONDS = 1.5  # of running per width


def shape_feeds(session: Any, rows: int, width: int) -> dict[str, Any]:
    """The model's inputs for ``rows`` texts of ``width`` word pieces each (any word piece, no padding)."""
    import numpy as np

    ids = np.full((rows, width), 1996, dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    names = {i.name for i in session.get_inputs()}
    return {k: v for k, v in feeds.items() if k in names}


def timed_runs(session: Any, feeds: dict[str, Any], seconds: float) -> tuple[int, float, float]:
    """One run to warm up, then runs for ``seconds``: how many, their wall-clock and CPU seconds."""
    session.run(None, feeds)
    t0, c0, runs = time.monotonic(), time.process_time(), 0
    while time.monotonic() - t0 < seconds:
        session.run(None, feeds)
        runs += 1
    return runs, time.monotonic() - t0, time.process_time() - c0


def ceiling(embedder: Any, lengths: list[int]) -> dict[str, Any]:
    """The model's ceiling for texts of these lengths (word pieces, special tokens included): its rate on
    batches of texts of one width (as many as the embedder runs at once at that width, at most
    ``CEILING_ROWS``: ``onnx_embedder.texts_per_run``; no padding, no tokenizing, no pooling), measured at
    each of ``CEILING_WIDTHS``; each text counted at the rate of the smallest width that holds it. Returns the
    rate per width and the seconds the model alone would need for all of them."""
    session = embedder.session
    rates: dict[int, float] = {}
    for width in CEILING_WIDTHS:
        if width > embedder.max_tokens or (lengths and width > 2 * max(lengths)):
            break
        rows = texts_per_run(width, CEILING_ROWS)
        runs, wall, _cpu = timed_runs(session, shape_feeds(session, rows, width), CEILING_SECONDS)
        rates[width] = runs * rows * width / wall
    seconds = 0.0
    for n in lengths:
        width = next((w for w in rates if w >= n), max(rates))
        seconds += n / rates[width]
    return {
        "word_pieces_per_s_by_width": {w: round(r) for w, r in rates.items()},
        "seconds": round(seconds, 2),
        "word_pieces_per_s": round(sum(lengths) / seconds, 1) if seconds else None,
        "intra_op_threads": session.get_session_options().intra_op_num_threads,
        "graph_optimization": str(session.get_session_options().graph_optimization_level).split(".")[-1],
    }


# ``--onnx-options``: sessions of the embedding model compared at fixed shapes (texts × word pieces).
OPTION_SHAPES = ((16, 64), (16, 128), (8, 200), (16, 256))
OPTION_ROUNDS = 3


def onnx_options(embedder: Any, rounds: int = OPTION_ROUNDS) -> dict[str, Any]:
    """The embedding model's rate in sessions with other threading — onnxruntime's default threads spinning
    (the app's session before it followed the load), the app's session now (``fit_to_machine`` before each
    turn; ``embedder`` must be fitted, ``threads=0``), one thread, and the default threads not spinning —
    each shape run for a second per session in turn, ``rounds`` rounds, so that a changing load hits each
    alike. Word pieces per second of wall-clock time and per CPU-second, per shape and session, and
    the app's choices (how many turns it ran each way)."""
    import onnxruntime as ort

    from localrag.core.embed.threads import SessionThreads, default_threads

    def session(threads: int = 0, spin: bool = True) -> Any:
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        options.enable_cpu_mem_arena = False  # as the app's session
        if not spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(embedder.files.onnx), options, providers=["CPUExecutionProvider"])

    fitted = "app: fitted to the load"
    sessions: dict[str, Any] = {
        "default threads, spinning": session(),
        fitted: None,
        "1 thread": session(1),
        "default threads, no spinning": session(spin=False),
    }
    choices: dict[str, int] = {}
    totals = {(name, shape): [0, 0.0, 0.0] for name in sessions for shape in OPTION_SHAPES}
    for _ in range(rounds):
        for rows, width in OPTION_SHAPES:
            for name, sess in sessions.items():
                if name == fitted:
                    chosen: SessionThreads = embedder.fit_to_machine()
                    key = f"{chosen.threads} thread(s), {'spinning' if chosen.spinning else 'not spinning'}"
                    choices[key] = choices.get(key, 0) + 1
                    sess = embedder.session
                runs, wall, cpu = timed_runs(sess, shape_feeds(sess, rows, width), 1.0)
                total = totals[(name, (rows, width))]
                total[0] += runs * rows * width
                total[1] += wall
                total[2] += cpu
    rows_out = [
        {
            "shape": f"{rows}x{width}",
            "session": name,
            "word_pieces_per_s": round(totals[(name, (rows, width))][0] / totals[(name, (rows, width))][1]),
            "per_cpu_s": round(totals[(name, (rows, width))][0] / totals[(name, (rows, width))][2]),
        }
        for rows, width in OPTION_SHAPES
        for name in sessions
    ]
    return {"default_threads": default_threads(), "app_turns": choices, "sessions": rows_out}


# ``--run-shapes``: the app's session at texts per run × word pieces per text.
SHAPE_WIDTHS = (64, 128, 200, 256)
SHAPE_ROWS = (1, 2, 4, 8, 16, 32)


def run_shapes(embedder: Any, rounds: int = OPTION_ROUNDS) -> dict[str, Any]:
    """The embedding model's rate (word pieces per second) by how many texts of one width a run holds: each
    shape for a second in turn, ``rounds`` rounds. What ``onnx_embedder.RUN_WORD_PIECES`` was chosen from."""
    import numpy as np

    session = embedder.session
    names = {i.name for i in session.get_inputs()}
    totals = {(w, r): [0, 0.0] for w in SHAPE_WIDTHS for r in SHAPE_ROWS}
    for _ in range(rounds):
        for width, rows in totals:
            ids = np.full((rows, width), 1996, dtype=np.int64)
            feeds = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),
            }
            feeds = {k: v for k, v in feeds.items() if k in names}
            session.run(None, feeds)
            t0, runs = time.monotonic(), 0
            while time.monotonic() - t0 < 1.0:
                session.run(None, feeds)
                runs += 1
            totals[(width, rows)][0] += runs * rows * width
            totals[(width, rows)][1] += time.monotonic() - t0
    return {
        "word_pieces_per_s": {
            str(w): {str(r): round(totals[(w, r)][0] / totals[(w, r)][1]) for r in SHAPE_ROWS}
            for w in SHAPE_WIDTHS
        },
        "run_word_pieces": RUN_WORD_PIECES,
    }


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="index a folder into a throw-away database and report throughput")
    p.add_argument("paths", nargs="*", type=Path)
    p.add_argument(
        "--onnx-options", action="store_true", help="compare the embedding session's options (no ingest)"
    )
    p.add_argument(
        "--run-shapes",
        action="store_true",
        help="the model's rate by texts per run and their width (no ingest)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=OPTION_ROUNDS,
        help="--onnx-options, --run-shapes: rounds over the shapes",
    )
    p.add_argument("--no-baseline", action="store_true", help="skip re-embedding the chunks alone")
    p.add_argument("--first-hit", metavar="WORDS", default="", help="time the first keyword hit for WORDS")
    p.add_argument("--stop-after-hit", action="store_true", help="pause indexing at the first hit")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.onnx_options or args.run_shapes:
        from localrag.core.embed.onnx_embedder import load_embedder

        load_before = os.getloadavg()[0]
        measure = run_shapes if args.run_shapes else onnx_options
        found = measure(load_embedder(), max(1, args.rounds))
        out = {
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "cpu_flags": cpu_flags(),
        }
        print(json.dumps({**out, **found}, indent=2))
        return 0
    if not args.paths:
        print("local-rag bench ingest: name the files or folders to index", file=sys.stderr)
        return 2
    report = bench_ingest(
        args.paths,
        embed_only=not args.no_baseline,
        hit_words=args.first_hit,
        stop_after_hit=args.stop_after_hit,
    )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:22} {value}")
    return 0
