"""Where Local RAG keeps its data. ``LOCALRAG_HOME`` overrides the per-user default."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

APP_NAME = "LocalRAG"
APP_ID = "org.localrag.LocalRAG"  # the desktop entry's and AppStream's id, the icon's name (resources/)


def data_dir() -> Path:
    """The per-user data folder, created private to the user (0700) if missing."""
    override = os.environ.get("LOCALRAG_HOME")
    path = (
        Path(override).expanduser()
        if override
        else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    )
    return ensure_private_dir(path)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` as 0700; an existing folder loses any read or write access for others.

    Traverse-only access (``--x``) is kept: when the app runs as root, the embedded server runs as its own
    account and must pass through this folder to reach its cluster.
    """
    if not path.exists():
        path.mkdir(parents=True, mode=0o700)
    if sys.platform != "win32":
        mode = path.stat().st_mode & 0o777
        if mode & 0o066:
            path.chmod(mode & ~0o066)
    return path


def pg_data_dir() -> Path:
    """The embedded PostgreSQL cluster. Created by initdb, not here."""
    return data_dir() / "pg"


def models_dir() -> Path:
    """Converted or user-added model files (for example the BF16 copy of the bundled GGUF)."""
    return ensure_private_dir(data_dir() / "models")


def cache_dir() -> Path:
    """Facts about this machine worked out once and shared by every data folder of the user (for example
    whether llama.cpp's AMX kernels run here). ``LOCALRAG_CACHE`` overrides the per-user default."""
    override = os.environ.get("LOCALRAG_CACHE")
    path = (
        Path(override).expanduser()
        if override
        else Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
    )
    return ensure_private_dir(path)


def logs_dir() -> Path:
    """The logs (``localrag.log``, ``postgres.log``): 0700, even when the data folder above must let the
    database's own account pass through (the app run as root)."""
    path = ensure_private_dir(data_dir() / "logs")
    if sys.platform != "win32" and path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


def log_file() -> Path:
    """The application's log (tracebacks of bugs go here; an internal error names this file)."""
    return logs_dir() / "localrag.log"


def settings_file() -> Path:
    return data_dir() / "settings.json"


def api_token_file() -> Path:
    """The secret every request to ``local-rag serve`` must carry (created 0600 by the server)."""
    return data_dir() / "api.token"


def resources_dir() -> Path:
    """The app's own files that are not code: icons, desktop entry, bundle metadata (``resources/``).

    ``resources/`` at the top of the source tree, or the copy inside the package (where the bundle built by
    ``packaging/build.sh`` puts it, as it does ``migrations/``).
    """
    here = Path(__file__).resolve()
    candidates = (here.parents[3] / "resources", here.parents[1] / "resources")
    return next((folder for folder in candidates if folder.is_dir()), candidates[0])


def icon_files() -> list[Path]:
    """The app icon's PNG files, one per size (16 to 512 px), smallest first."""
    folder = resources_dir() / "icons" / "hicolor"
    found = folder.glob(f"*x*/apps/{APP_ID}.png")
    return sorted(found, key=lambda path: int(path.parent.parent.name.split("x")[0]))
