"""``local-rag bench api --chunks N``: the search hot path through ``local-rag serve`` beside the same search
in process, on one store of N chunks.

The store is built as for ``bench retrieval`` (``bench_corpus.build_corpus``: a BEIR corpus, real chunks
then synthetic ones) in a throw-away data folder whose embedded PostgreSQL this process owns. A real
``local-rag serve`` runs on that folder as a guest, as it would beside the window; this process opens a
``Library`` on the same database with the same embedding threads (``embedding_service``). Each query is then
asked both ways, in turn first (so neither side always finds the pages the other just read): in process,
``retrieve(library, query, k=8)``; through the API, ``POST /v1/search`` on one kept-alive connection, timed
from the request to the parsed JSON. Reported: p50/p95 of each, of the difference per query, and of the
server's own ``retrieve`` time (so the rest is HTTP, the token check and JSON).
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from localrag.core.config import Settings
from localrag.core.embed.onnx_embedder import load_embedder
from localrag.core.errors import KnownError
from localrag.core.progress import Progress, print_progress
from localrag.core.retrieve import retrieve
from localrag.core.store import db
from localrag.eval import beir, metrics
from localrag.eval.bench_corpus import build_corpus, load_chunks
from localrag.eval.machine import machine
from localrag.host.embedding import embedding_service

WARM_QUERIES = 50  # asked both ways before measuring, others than the ones measured
START_WITHIN_S = 180.0
TARGET_MS = 10.0  # what the API may add to the in-process p50 and p95
_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/v1")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("api", help="search through the HTTP API beside the same search in process")
    p.add_argument(
        "--chunks", type=int, default=20_000, help="chunks in the throw-away store (default 20000)"
    )
    p.add_argument("--queries", type=int, default=200, help="queries measured each way (default 200)")
    p.add_argument(
        "--corpus", type=Path, default=None, help="a BEIR folder (default: as for bench retrieval)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cache = Path(os.environ["LOCALRAG_EVAL_CACHE"]) if os.environ.get("LOCALRAG_EVAL_CACHE") else None
    report = bench(
        args.chunks, queries=args.queries, corpus=args.corpus, cache_dir=cache, progress=print_progress
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    local, api, diff = report["in_process_ms"], report["api_ms"], report["api_minus_in_process_ms"]
    print(f"{report['chunks']} chunks; {report['machine']['cpu']} × {report['machine']['cores']}")
    print(f"in process (retrieve, k=8 hybrid): p50 {local['p50']} ms, p95 {local['p95']} ms")
    print(f"through the API (POST /v1/search): p50 {api['p50']} ms, p95 {api['p95']} ms")
    print(f"  of which the server's retrieve: p50 {report['api_server_retrieve_ms']['p50']} ms")
    print(f"difference per query: p50 {diff['p50']} ms, p95 {diff['p95']} ms")
    verdict = "within" if report["within_target"] else "NOT within"
    print(f"the API's p50 and p95 are {verdict} {TARGET_MS:g} ms of the in-process ones")
    return 0


def bench(
    n_chunks: int,
    *,
    queries: int = 200,
    corpus: Path | None = None,
    cache_dir: Path | None = None,
    progress: beir.ProgressFn | None = None,
) -> dict[str, Any]:
    from localrag.core.library import Library

    settings = Settings.load()
    embedder = load_embedder(settings.embedding_model_dir or None)
    say = (lambda label: progress(Progress(label))) if progress else (lambda label: None)
    built = build_corpus(n_chunks, corpus, embedder, settings, cache_dir, progress)
    rng = np.random.default_rng(2)
    texts = [built.queries[i] for i in rng.permutation(len(built.queries))]
    warm, measured = texts[:WARM_QUERIES], texts[WARM_QUERIES : WARM_QUERIES + queries]
    report: dict[str, Any] = {"chunks": len(built.chunks), "queries": len(measured), "machine": machine()}
    folder = Path(tempfile.mkdtemp(prefix="lrag-bench-api-"))
    try:
        with beir.kept_store(folder) as conninfo:
            with db.connect(conninfo) as conn:
                say(f"loading {len(built.chunks)} chunks")
                load_chunks(conn, built.docs, built.chunks, built.vectors, embedder, progress)
            say("starting local-rag serve on the store")
            server = ServeProcess(folder)
            library = Library(dataclasses.replace(settings, database_url=conninfo), owner=False)
            try:
                library.open(migrate=False)
                with embedding_service(library):
                    search = server.searcher()
                    for text in warm:
                        retrieve(library, text, k=settings.k)
                        search(text, settings.k)
                    say(f"{len(measured)} queries each way")
                    report.update(_measure(library, search, measured, settings.k))
            finally:
                library.close()
                server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report["within_target"] = (
        report["api_ms"]["p50"] - report["in_process_ms"]["p50"] <= TARGET_MS
        and report["api_ms"]["p95"] - report["in_process_ms"]["p95"] <= TARGET_MS
    )
    report["machine"]["load_average_after"] = machine()["load_average"]
    return report


def _measure(library: Any, search: Any, texts: list[str], k: int) -> dict[str, Any]:
    local: list[float] = []
    api: list[float] = []
    inside: list[float] = []
    for i, text in enumerate(texts):
        for side in ("api", "local") if i % 2 else ("local", "api"):
            t = time.perf_counter()
            if side == "local":
                resp = retrieve(library, text, k=k)
                if resp.reason:
                    raise KnownError(f"retrieval failed during the benchmark: {resp.error or resp.reason}")
                local.append((time.perf_counter() - t) * 1000)
            else:
                data = search(text, k)
                api.append((time.perf_counter() - t) * 1000)
                inside.append(float(data["timings"]["total"]))
    return {
        "in_process_ms": metrics.percentiles(local),
        "api_ms": metrics.percentiles(api),
        "api_minus_in_process_ms": metrics.percentiles([a - b for a, b in zip(api, local, strict=True)]),
        "api_server_retrieve_ms": metrics.percentiles(inside),
    }


class ServeProcess:
    """``python -m localrag serve --port 0`` on the data folder ``home``, until ``stop``; documents may be
    added through it from the folders in ``allow``."""

    def __init__(self, home: Path, allow: tuple[Path, ...] = ()) -> None:
        self.home = home
        env = {**os.environ, "LOCALRAG_HOME": str(home)}
        env.pop("LOCALRAG_DATABASE_URL", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "localrag", "serve", "--port", "0", *(f"--allow={a}" for a in allow)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.port = self._wait_for_port()
        self.token = (home / "api.token").read_text(encoding="utf-8").strip()

    def _wait_for_port(self) -> int:
        lines: queue.Queue[str] = queue.Queue()
        stdout = self.proc.stdout
        assert stdout is not None

        def read() -> None:
            for line in stdout:
                lines.put(line)

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + START_WITHIN_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                found = _URL.search(lines.get(timeout=0.2))
            except queue.Empty:
                continue
            if found:
                return int(found.group(1))
        self.stop()
        raise KnownError(f"local-rag serve did not start; see {self.home / 'logs'}.")

    def searcher(self) -> Any:
        """A function ``(query, k) -> the JSON of POST /v1/search``, on one kept-alive connection, once the
        server's models have loaded (so that the load does not share the cores with the measurement)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}

        def call(method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            resp = conn.getresponse()
            data = json.loads(resp.read())
            if resp.status != 200:
                raise KnownError(f"{path} answered {resp.status}: {data.get('error')}")
            return data

        deadline = time.monotonic() + START_WITHIN_S
        while call("GET", "/v1/status")["model"]["status"] in ("idle", "loading"):
            if time.monotonic() > deadline:
                raise KnownError("the server's language model did not load in time")
            time.sleep(0.2)
        return lambda query, k: call("POST", "/v1/search", {"query": query, "k": k})

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
