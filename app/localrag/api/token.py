"""The API's token: a random secret in the data folder, readable by its owner only."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path


def load_or_create(path: Path) -> str:
    """The token in ``path``; a new one is written (0600) when the file is missing or empty. A file others
    could read is made private again."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    if not token:
        token = secrets.token_urlsafe(32)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
        tmp.replace(path)
    if sys.platform != "win32" and path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return token
