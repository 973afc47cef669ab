"""An exclusive, non-blocking lock on a file, held for as long as the process keeps it open.

``flock`` locks belong to the open file, so two opens conflict even inside one process, and the kernel drops
the lock when the process dies, however it dies.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


class FileLock:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock if it is free; return whether this object now holds it."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if sys.platform == "win32":
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return True

    def acquire_within(self, seconds: float) -> bool:
        """Take the lock, waiting up to ``seconds`` for its holder to let it go; return whether it is held."""
        deadline = time.monotonic() + seconds
        while not self.acquire():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        if sys.platform == "win32":
            import msvcrt

            os.lseek(self._fd, 0, 0)
            msvcrt.locking(self._fd, msvcrt.LK_UNLCK, 1)
        os.close(self._fd)
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None
