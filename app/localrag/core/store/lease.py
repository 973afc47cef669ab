"""Who uses the embedded server of a data folder: one lease per user, so that the last one out stops it.

Every process that uses the server (the window, ``serve``, each command) holds a lease while it does: a file
in ``users/`` under the data folder, named after its pid, that it keeps open with a lock on it. The kernel
drops the lock when the process ends, however it ends (``kill -9`` too), so a lease is live exactly while its
process holds it: a dead user's file is stale at once, and a pid used again by another process changes
nothing. Taking or giving back a lease, and starting or stopping the server, happen under one more lock,
``server.lock``: the user that gives back the last live lease stops the server before anyone can take a new
one, and the next user starts it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from localrag.core.errors import StoreUnavailable
from localrag.core.store.lockfile import FileLock

log = logging.getLogger("localrag.store.lease")

# How long a user waits for another to finish starting or stopping the server (a first start runs initdb).
CONTROL_WAIT_S = 180.0


class Leases:
    """The leases on the server of the data folder ``home``; this object holds at most one of them."""

    def __init__(self, home: Path) -> None:
        self.folder = Path(home) / "users"
        self._control = FileLock(Path(home) / "server.lock")
        self._mine: FileLock | None = None

    @contextlib.contextmanager
    def control(self, wait_s: float = CONTROL_WAIT_S) -> Iterator[None]:
        """Held while leases are taken or given back and while the server starts or stops.

        Raises:
            StoreUnavailable: another user kept it for longer than ``wait_s``.
        """
        if not self._control.acquire_within(wait_s):
            raise StoreUnavailable(
                f"Another Local RAG process has been starting or stopping the database of "
                f"{self.folder.parent} for more than {wait_s:.0f} s; see logs/postgres.log there."
            )
        try:
            yield
        finally:
            self._control.release()

    @property
    def held(self) -> bool:
        return self._mine is not None

    def take(self) -> None:
        """Register this user (under ``control``)."""
        if self._mine is not None:
            return
        self.folder.mkdir(mode=0o700, exist_ok=True)
        lease = FileLock(self.folder / f"{os.getpid()}-{secrets.token_hex(4)}")
        if not lease.acquire():  # a fresh name nobody else opens: cannot happen short of a broken filesystem
            raise StoreUnavailable(f"Cannot lock {lease.path}.")
        self._mine = lease

    def give_back(self) -> None:
        """Unregister this user (under ``control`` when the server may be stopped next)."""
        lease, self._mine = self._mine, None
        if lease is None:
            return
        with contextlib.suppress(OSError):
            lease.path.unlink()
        lease.release()

    def others(self) -> int:
        """How many other users hold a live lease (under ``control``). Stale files are removed on the way."""
        live = 0
        try:
            entries = list(self.folder.iterdir())
        except FileNotFoundError:
            return 0
        for path in entries:
            if self._mine is not None and path == self._mine.path:
                continue
            probe = FileLock(path)
            try:
                free = probe.acquire()
            except OSError:  # gone in between, or not ours to open: not a user
                continue
            if not free:
                live += 1
                continue
            # Its process ended without giving it back (killed, or crashed).
            log.info("removing the stale lease %s", path.name)
            with contextlib.suppress(OSError):
                path.unlink()
            probe.release()
        return live
