"""Processes sharing one data folder's embedded server: each holds a lease, the last one out stops the server,
and a user killed with SIGKILL keeps nothing running. Real commands (``python -m localrag``) on a fresh data
folder of their own, a real PostgreSQL; the searches are keyword searches so that twenty of them do not load
twenty embedding models."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from localrag.core.store.server import EmbeddedServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL, Unix sockets")

NOTES = {
    "glaciers.md": "# Glaciers\n\nGlacier melt rates doubled in the Alps since 2000, the survey says.\n",
    "tides.md": "# Tides\n\nSpring tides follow the full and the new moon; neap tides the quarters.\n",
}


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "LOCALRAG_HOME": str(home)}


def _command(home: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "localrag", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _postgres_of(home: Path) -> list[psutil.Process]:
    """PostgreSQL processes serving the cluster in ``home`` (the postmaster and its children)."""
    pgdata = str((home / "pg").resolve())
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if "postgres" in (proc.info["name"] or "") and pgdata in cmdline:
            found.append(proc)
    return found


def _server(home: Path) -> EmbeddedServer:
    return EmbeddedServer(home / "pg", owner=False)


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory):
    """A fresh data folder with two notes indexed by `local-rag ingest`, and no server left running."""
    home = tmp_path_factory.mktemp("shared-home")
    notes = tmp_path_factory.mktemp("shared-notes")
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    done = _command(home, "ingest", str(notes), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ready"] == 2
    assert not _server(home).is_running() and not _postgres_of(home)
    return home


def test_twenty_commands_at_random_moments_share_the_server(shared_home):
    """Twenty `local-rag search --json` started at random moments over three seconds on one data folder with
    no window open: every one answers with its passage (none loses its connection when another finishes and
    leaves), and once the last has left no PostgreSQL runs."""
    rng = random.Random(20261125)
    starts = sorted(rng.uniform(0, 3.0) for _ in range(20))
    answers: list[subprocess.CompletedProcess[str] | None] = [None] * len(starts)

    def one(i: int, at: float, t0: float) -> None:
        time.sleep(max(0.0, t0 + at - time.monotonic()))
        answers[i] = _command(shared_home, "search", "glacier melt rates", "--mode", "keyword", "--json")

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i, at, t0)) for i, at in enumerate(starts)]
    for t in threads:
        t.start()
    overlapped = 0
    while any(t.is_alive() for t in threads):
        overlapped = max(overlapped, len(list((shared_home / "users").glob("*"))))
        time.sleep(0.05)
    for t in threads:
        t.join()
    failures = []
    for done in answers:
        assert done is not None
        out = json.loads(done.stdout)
        if done.returncode != 0 or out["reason"] is not None or not out["results"]:
            failures.append((done.returncode, out["error"], done.stderr[-500:]))
        else:
            assert out["results"][0]["file_name"] == "glaciers.md"
    assert failures == []
    assert overlapped >= 2  # they did share the server (leases held at once)
    assert not _server(shared_home).is_running()
    assert _postgres_of(shared_home) == []
    assert list((shared_home / "users").glob("*")) == []


def test_a_failed_search_exits_non_zero_and_says_why_in_its_json(shared_home, tmp_path):
    """Fault injected: the data folder's path is taken by a file, so the store cannot start."""
    not_a_folder = tmp_path / "not-a-folder"
    not_a_folder.write_text("a file where the data folder should be")
    done = _command(not_a_folder, "search", "glacier melt rates", "--mode", "keyword", "--json")
    out = json.loads(done.stdout)
    assert done.returncode == 1
    assert out["reason"] == "error" and out["error"] and out["results"] == []


def test_a_killed_ingest_leaves_no_server_behind(shared_home, tmp_path):
    """`local-rag ingest` SIGKILLed while it indexes leaves its PostgreSQL running with nobody's lease on it;
    the next command stops it when it leaves (and the killed one's lease file is gone)."""
    big = tmp_path / "big"
    big.mkdir()
    for i in range(40):
        text = f"# Part {i}\n\n" + "Sea ice and glaciers. " * 400
        (big / f"part-{i}.md").write_text(text, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "localrag", "ingest", str(big)],
        env=_env(shared_home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = _server(shared_home)
    deadline = time.monotonic() + 120
    while not (server.is_running() and list((shared_home / "users").glob(f"{proc.pid}-*"))):
        assert proc.poll() is None and time.monotonic() < deadline, "the ingest ended before it was killed"
        time.sleep(0.05)
    time.sleep(1.0)  # into its work
    assert proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert server.is_running()  # orphaned: what the next command must clean up

    done = _command(shared_home, "search", "glacier melt rates", "--mode", "keyword", "--json")
    assert done.returncode == 0, done.stderr
    assert not server.is_running()
    assert _postgres_of(shared_home) == []
    assert list((shared_home / "users").glob("*")) == []


def test_a_stale_lease_does_not_stop_a_live_user(shared_home):
    """In one process: two users attach; the first leaves and the second's connection still works; a lease
    file left by a dead process counts for nothing; the second leaves and the server stops."""
    import psycopg

    first, second = _server(shared_home), _server(shared_home)
    conninfo = first.start()
    second.start()
    stale = shared_home / "users" / "999999-dead"
    stale.write_text("999999")  # nobody holds its lock: what a killed process leaves
    with psycopg.connect(second.conninfo()) as conn:
        first.stop()
        assert conn.execute("SELECT 41 + 1").fetchone()[0] == 42  # the same connection, still served
    assert second.is_running()
    second.stop()
    assert not second.is_running()
    assert not stale.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(conninfo, connect_timeout=3)


def test_serve_keeps_its_server_while_commands_come_and_go(shared_home, tmp_path):
    """`local-rag serve` started alone on the folder, three commands run beside it and leave: the same
    postmaster serves the API throughout, and it stops when `serve` stops."""
    from api_server import ApiServer

    api = ApiServer(shared_home, tmp_path, LOCALRAG_HOME=str(shared_home))
    try:
        server = _server(shared_home)
        postmaster = server.postmaster_pid()
        assert postmaster is not None
        body = {"query": "glacier melt rates", "mode": "keyword"}
        assert api.client.post("/v1/search", json=body).status_code == 200
        with ThreadPoolExecutor(3) as pool:
            runs = list(
                pool.map(
                    lambda _: _command(shared_home, "search", "spring tides", "--mode", "keyword", "--json"),
                    range(3),
                )
            )
        assert [r.returncode for r in runs] == [0, 0, 0]
        assert server.postmaster_pid() == postmaster  # not stopped (nor restarted) by the commands leaving
        after = api.client.post("/v1/search", json=body)
        assert after.status_code == 200 and after.json()["results"]
    finally:
        assert api.stop() == 0
    assert not _server(shared_home).is_running()
    assert _postgres_of(shared_home) == []
