"""The application's log: ``logs/localrag.log`` in the data folder, written by every entry point.

``set_up_logging`` is called once by whatever starts the process (the window, any command, ``serve``); the
internal-error messages name this file (``core.errors.internal_error``), so it must exist whichever one ran.
The log is rotated (``MAX_BYTES``, ``BACKUPS`` old files kept); every file is created 0600, and ``logs/``
is 0700, whoever runs the app.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from logging.handlers import RotatingFileHandler

from localrag.core import paths

MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"
TERMINAL_FORMAT = "%(levelname)s %(name)s: %(message)s"


class PrivateRotatingFile(RotatingFileHandler):
    """A rotated log whose files (the current one and each new one after a rotation) are readable by their
    owner only."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if sys.platform != "win32":
            os.fchmod(fd, 0o600)  # a file left by an older version, or created under another umask
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)


def set_up_logging(*, terminal_level: int | None = logging.WARNING) -> None:
    """Log to ``logs/localrag.log`` (INFO and above) and, unless ``terminal_level`` is ``None``, to stderr
    (that level and above). Calling it again replaces the handlers it added (a data folder chosen since)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_localrag", False)]:
        root.removeHandler(handler)
        handler.close()
    handlers: list[logging.Handler] = []
    try:
        file = PrivateRotatingFile(
            paths.log_file(), maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
        )
        file.setFormatter(logging.Formatter(FILE_FORMAT))
        file.setLevel(logging.INFO)
        handlers.append(file)
    except OSError as exc:  # a read-only or full data folder: the app still runs, and says so
        where = f" {exc.filename}" if exc.filename else ""
        print(f"local-rag: cannot write the log{where}: {exc.strerror or exc}", file=sys.stderr)
    if terminal_level is not None:
        terminal = logging.StreamHandler()
        terminal.setFormatter(logging.Formatter(TERMINAL_FORMAT))
        terminal.setLevel(terminal_level)
        handlers.append(terminal)
    for handler in handlers:
        handler._localrag = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(min([logging.INFO, *(h.level for h in handlers)]))
