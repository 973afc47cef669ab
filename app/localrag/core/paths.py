"""Where Local RAG keeps its data. ``LOCALRAG_HOME`` overrides the per-user default."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

APP_NAME = "LocalRAG"


def data_dir() -> Path:
    """The per-user data folder, created private to the user (0700) if missing."""
    override = os.environ.get("LOCALRAG_HOME")
    path = Path(override).expanduser() if override else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    return ensure_private_dir(path)


def ensure_private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if sys.platform != "win32":
        path.chmod(0o700)
    return path


def pg_data_dir() -> Path:
    """The embedded PostgreSQL cluster. Created by initdb, not here."""
    return data_dir() / "pg"


def models_dir() -> Path:
    """Converted or user-added model files (for example the BF16 copy of the bundled GGUF)."""
    return ensure_private_dir(data_dir() / "models")


def logs_dir() -> Path:
    return ensure_private_dir(data_dir() / "logs")


def settings_file() -> Path:
    return data_dir() / "settings.json"
