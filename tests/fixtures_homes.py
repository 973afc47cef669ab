"""The test session's data folder, and the embedded servers of sessions that ended without stopping theirs.

Each session makes its own ``lrag-test-*`` data folder in the temporary directory and holds a lock on its
``session.lock`` for as long as the pytest process lives (the kernel drops the lock however the process ends).
A session that ends normally stops its server (the ``library`` fixture) and removes its folder. One that is
killed (``kill -9``, a test run past pytest-timeout's limit, a closed terminal) cannot: the next session finds
its folder with the lock free, stops the server nobody uses any more and removes the folder. Folders of older
sessions, without the lock file, only have their server stopped, and only when no process holds a lease on it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from localrag.core.store.lockfile import FileLock

log = logging.getLogger("localrag.tests.homes")

PREFIX = "lrag-test-"
SESSION_LOCK = "session.lock"
KEEP_ENV = "LOCALRAG_KEEP_TEST_HOME"  # "1": leave the session's data folder in place (to look at its logs)


def new_home() -> tuple[Path, FileLock]:
    """A fresh data folder for this session, locked as its own until the process ends."""
    home = Path(tempfile.mkdtemp(prefix=PREFIX))
    lock = FileLock(home / SESSION_LOCK)
    if not lock.acquire():  # a folder made a moment ago that nobody else knows: cannot happen
        raise RuntimeError(f"cannot lock {lock.path}")
    return home, lock


def _stop_unused_server(home: Path) -> bool:
    """Stop the embedded server of ``home`` when it runs and no live process holds a lease on it; returns
    whether it is down. Joins as a guest and leaves: the last one out stops the server (``server.stop``)."""
    from localrag.core.errors import StoreUnavailable
    from localrag.core.store.server import EmbeddedServer

    pgdata = home / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return True
    try:
        server = EmbeddedServer(pgdata, owner=False)
        if not server.is_running():
            return True
        with server.leases.control(wait_s=5):
            if server.leases.others():
                return False
            server.leases.take()
        server.stop()
        return not server.is_running()
    except (StoreUnavailable, OSError) as exc:
        log.warning("left the server of %s as it is: %s", home, exc)
        return False


def sweep(current: Path) -> list[Path]:
    """Stop the servers left by ended sessions and remove their folders; returns the folders cleaned."""
    cleaned = []
    for home in sorted(Path(tempfile.gettempdir()).glob(f"{PREFIX}*")):
        if home == current or not home.is_dir():
            continue
        marker = home / SESSION_LOCK
        if not marker.exists():  # an older session's folder: its server only, and only when unused
            if (home / "pg" / "postmaster.pid").exists() and _stop_unused_server(home):
                cleaned.append(home)
            continue
        probe = FileLock(marker)
        try:
            if not probe.acquire():  # its session is still running
                continue
        except OSError:
            continue
        try:
            if _stop_unused_server(home):
                shutil.rmtree(home, ignore_errors=True)
                cleaned.append(home)
        finally:
            probe.release()
    return cleaned


def remove_home(home: Path, lock: FileLock) -> None:
    """At the end of the session: its folder goes, unless asked to stay or its server is still up."""
    if os.environ.get(KEEP_ENV) == "1":
        return
    # Leases this process still holds (a guest library a test left open) end with it: they do not keep the
    # server up.
    for lease in (home / "users").glob(f"{os.getpid()}-*"):
        with contextlib.suppress(OSError):
            lease.unlink()
    with contextlib.suppress(Exception):
        if not _stop_unused_server(home):
            return
    lock.release()
    shutil.rmtree(home, ignore_errors=True)
