"""``local-rag bench load --searches N --asks M``: N searches and M questions sent at once to a real
``local-rag serve``, each on its own connection: how many were answered, how many were told to come back
(503 with ``Retry-After``, when every pooled database connection stayed in use), how many failed otherwise,
and whether the server still answers afterwards.

The server runs on a throw-away data folder holding a few short notes, added through the API. Every request
gets its own thread and connection, and all of them are released together (a barrier), so the server sees
N + M clients at the same moment.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from localrag.core.errors import KnownError
from localrag.eval.bench_api import ServeProcess
from localrag.eval.machine import machine

NOTES = {
    "glaciers.md": "# Glaciers\n\nGlacier melt rates doubled in the Alps since 2000, the survey says.\n",
    "tides.md": "# Tides\n\nSpring tides follow the full and the new moon; neap tides follow the quarters.\n",
    "coffee.md": "# Coffee\n\nArabica grows best between 1,000 and 2,000 metres, in shade.\n",
}
QUERIES = ["glacier melt rates", "when are spring tides", "where does arabica grow", "neap tides", "alps"]
QUESTION = "How fast do the glaciers melt?"
REQUEST_TIMEOUT_S = 240.0
READY_WITHIN_S = 120.0


@dataclass
class Outcome:
    kind: str  # "search" or "ask"
    status: int  # 0: no HTTP answer at all (the connection failed)
    retry_after: str | None
    ms: float
    error: str


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("load", help="many searches and questions at once through local-rag serve")
    p.add_argument("--searches", type=int, default=500, help="searches sent at once (default 500)")
    p.add_argument("--asks", type=int, default=20, help="questions sent with them (default 20)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = bench(args.searches, args.asks)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        s, a = report["search"], report["ask"]
        print(f"{report['machine']['cpu']} × {report['machine']['cores']}")
        print(
            f"{args.searches} searches: {s['ok']} answered, {s['retry']} told to retry (503 + Retry-After), "
            f"{s['failed']} failed; p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, max {s['max_ms']} ms"
        )
        print(
            f"{args.asks} questions: {a['ok']} answered, {a['retry']} told to retry, {a['failed']} failed; "
            f"p50 {a['p50_ms']} ms, max {a['max_ms']} ms"
        )
        print(
            f"all sent within {report['seconds']} s; the server answers afterwards: {report['alive_after']}"
        )
    return 0 if report["failures"] == [] and report["alive_after"] else 1


def bench(searches: int, asks: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="localrag-bench-load-"))
    server: ServeProcess | None = None
    try:
        home, notes = folder / "home", folder / "notes"
        notes.mkdir(parents=True)
        for name, text in NOTES.items():
            (notes / name).write_text(text, encoding="utf-8")
        server = ServeProcess(home, allow=(notes,))
        _add_and_wait(server, notes)
        server.searcher()("warm up", 1)  # the models are loaded before the clients arrive
        requests = [("search", {"query": QUERIES[i % len(QUERIES)], "k": 5}) for i in range(searches)]
        requests += [("ask", {"question": QUESTION, "max_tokens": 32}) for _ in range(asks)]
        started = time.monotonic()
        outcomes = _all_at_once(server, requests)
        seconds = time.monotonic() - started
        alive = _still_answers(server)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    failures = [
        {"kind": o.kind, "status": o.status, "error": o.error[:300]}
        for o in outcomes
        if not (o.status == 200 or (o.status == 503 and o.retry_after))
    ]
    return {
        "machine": machine(),
        "seconds": round(seconds, 2),
        "search": _summary([o for o in outcomes if o.kind == "search"]),
        "ask": _summary([o for o in outcomes if o.kind == "ask"]),
        "failures": failures,
        "too_many_clients": sum("too many clients" in o.error for o in outcomes),
        "alive_after": alive,
    }


def _add_and_wait(server: ServeProcess, notes: Path) -> None:
    status, body, _ = _request(server.port, server.token, "POST", "/v1/documents", {"paths": [str(notes)]})
    if status != 202:
        raise KnownError(f"adding the notes answered {status}: {body}")
    deadline = time.monotonic() + READY_WITHIN_S
    while True:
        _, body, _ = _request(server.port, server.token, "GET", "/v1/documents", None)
        if [d["status"] for d in json.loads(body)["documents"]] == ["ready"] * len(NOTES):
            return
        if time.monotonic() > deadline:
            raise KnownError(f"the notes were not indexed within {READY_WITHIN_S:.0f} s: {body[:300]}")
        time.sleep(0.2)


def _all_at_once(server: ServeProcess, requests: list[tuple[str, dict[str, Any]]]) -> list[Outcome]:
    outcomes: list[Outcome | None] = [None] * len(requests)
    barrier = threading.Barrier(len(requests))

    def one(i: int, kind: str, body: dict[str, Any]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=REQUEST_TIMEOUT_S)
        try:
            conn.connect()
            barrier.wait()
            t = time.perf_counter()
            conn.request("POST", f"/v1/{kind}", json.dumps(body), _headers(server.token))
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
            ms = (time.perf_counter() - t) * 1000
            error = "" if resp.status == 200 else text
            outcomes[i] = Outcome(kind, resp.status, resp.getheader("Retry-After"), ms, error)
        except (OSError, http.client.HTTPException, threading.BrokenBarrierError) as exc:
            outcomes[i] = Outcome(kind, 0, None, 0.0, f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()

    threads = [
        threading.Thread(target=one, args=(i, kind, body), name=f"load-{i}", daemon=True)
        for i, (kind, body) in enumerate(requests)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(REQUEST_TIMEOUT_S + 10)
    return [o or Outcome("?", 0, None, 0.0, "no answer within the time allowed") for o in outcomes]


def _still_answers(server: ServeProcess) -> bool:
    try:
        status, body, _ = _request(server.port, server.token, "POST", "/v1/search", {"query": QUERIES[0]})
    except (OSError, http.client.HTTPException):
        return False
    return status == 200 and bool(json.loads(body)["results"]) and server.proc.poll() is None


def _summary(outcomes: list[Outcome]) -> dict[str, Any]:
    ms = np.array([o.ms for o in outcomes if o.status == 200] or [0.0])
    return {
        "ok": sum(o.status == 200 for o in outcomes),
        "retry": sum(o.status == 503 and bool(o.retry_after) for o in outcomes),
        "failed": sum(not (o.status == 200 or (o.status == 503 and o.retry_after)) for o in outcomes),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "max_ms": round(float(ms.max()), 1),
    }


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def _request(
    port: int, token: str, method: str, path: str, body: dict[str, Any] | None
) -> tuple[int, str, str | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None, _headers(token))
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace"), resp.getheader("Retry-After")
    finally:
        conn.close()
