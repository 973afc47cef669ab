"""The embedded server: start, stop, restart, a start after a killed run, one owner per data folder."""

from __future__ import annotations

import logging
import os
import signal
import stat
import sys
import time

import psycopg
import pytest

from localrag.core.errors import AlreadyRunning, StoreUnavailable
from localrag.core.store.server import EmbeddedServer


def _query(conninfo: str) -> int:
    with psycopg.connect(conninfo) as conn:
        return conn.execute("SELECT 41 + 1").fetchone()[0]


def test_start_stop_restart(tmp_path):
    server = EmbeddedServer(tmp_path / "pg")
    conninfo = server.start()
    assert _query(conninfo) == 42
    server.stop()
    assert not server.is_running()
    with pytest.raises(psycopg.OperationalError):
        _query(conninfo)
    again = EmbeddedServer(tmp_path / "pg")
    assert _query(again.start()) == 42
    again.stop()


def test_only_loopback_or_socket_and_password_required(tmp_path):
    server = EmbeddedServer(tmp_path / "pg")
    conninfo = server.start()
    try:
        with psycopg.connect(conninfo) as conn:
            listen = conn.execute("SHOW listen_addresses").fetchone()[0]
            assert listen in ("", "127.0.0.1", "localhost")
        without_password = conninfo.rsplit(" password=", 1)[0]
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(without_password, connect_timeout=5)
    finally:
        server.stop()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_start_after_killed_run(tmp_path):
    """A crash leaves the postmaster dead with its pid file and socket lock behind; the next start copes."""
    server = EmbeddedServer(tmp_path / "pg")
    server.start()
    pid = server.postmaster_pid()
    assert pid
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while server.postmaster_pid() is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (tmp_path / "pg" / "postmaster.pid").exists()  # stale
    server._release()  # the crashed process's lock goes with it
    fresh = EmbeddedServer(tmp_path / "pg")
    assert _query(fresh.start()) == 42
    fresh.stop()


def test_second_owner_is_refused_but_a_guest_attaches(tmp_path):
    first = EmbeddedServer(tmp_path / "pg")
    conninfo = first.start()
    try:
        with pytest.raises(AlreadyRunning, match="already running"):
            EmbeddedServer(tmp_path / "pg").start()
        guest = EmbeddedServer(tmp_path / "pg", owner=False)
        assert _query(guest.start()) == 42
        guest.stop()  # a guest never stops the owner's server
        assert _query(conninfo) == 42
    finally:
        first.stop()


def test_memory_is_sized_to_the_machine_and_buffers_survive_a_restart(library):
    """A third of RAM (128 MB to 8 GB) for shared buffers, and pg_prewarm saving and restoring them."""
    from localrag.core.store.server import memory_options

    gb = 2**30
    assert "shared_buffers=8192MB" in memory_options(24 * gb)
    assert "shared_buffers=2048MB" in memory_options(6 * gb)
    assert "shared_buffers=128MB" in memory_options(gb // 4)
    with library.connect() as conn:
        assert "pg_prewarm" in conn.execute("SHOW shared_preload_libraries").fetchone()[0]
        assert conn.execute("SHOW pg_prewarm.autoprewarm").fetchone()[0] == "on"


def test_as_root_the_store_refuses_to_start_unless_asked(tmp_path, monkeypatch):
    """Fault injected (the tests may not run as root): the process is taken to be root. Without
    LOCALRAG_ALLOW_ROOT=1 the store refuses with a one-line reason naming the variable, and changes
    nothing."""
    from localrag.core.store import server as server_module

    monkeypatch.setattr(server_module, "_running_as_root", lambda: True)
    monkeypatch.delenv("LOCALRAG_ALLOW_ROOT", raising=False)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    server = EmbeddedServer(private / "pg")
    for _ in range(2):  # the refusal keeps no lock: asked again, it refuses the same way
        with pytest.raises(StoreUnavailable, match="LOCALRAG_ALLOW_ROOT=1") as refused:
            server.start()
        assert "\n" not in refused.value.message and "root" in refused.value.message
    assert not (private / "pg").exists() and stat.S_IMODE(private.stat().st_mode) == 0o700
    assert server.system_changes == []


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() != 0, reason="changes the system only as root")
def test_as_root_when_asked_the_store_reports_what_it_changed(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("LOCALRAG_ALLOW_ROOT", "1")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    server = EmbeddedServer(private / "pg")
    with caplog.at_level(logging.WARNING, logger="localrag.store.server"):
        assert _query(server.start()) == 42
    server.stop()
    assert stat.S_IMODE(private.stat().st_mode) == 0o711  # traverse only, for the server's account
    assert [c for c in server.system_changes if str(private) in c] == [
        f"let every account traverse (not list) {private}, for localrag-pg to reach the data"
    ]
    assert any(
        str(private) in r.getMessage() and "LOCALRAG_ALLOW_ROOT" in r.getMessage() for r in caplog.records
    )
