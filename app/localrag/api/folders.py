"""The folders ``POST /v1/documents`` may read: the watched folders, those allowed in the settings
(``api_folders``, edited in the window's Settings → Storage) and those given to ``local-rag serve --allow``.

A path is checked once every symbolic link in it is resolved (``os.path.realpath``), so neither a link nor
``..`` leads outside; the file that is indexed is the resolved one. A folder is walked the same way: a file in
it that is a link to outside is left out (reported as skipped), and links to folders are not followed. A path
outside answers the same 403, with the same body, whether it exists or not, so the API tells nothing about the
rest of the disk. The data folder (the database's files, its password, the API's token) is never read, even
inside an allowed folder.

The allowed folders are read again for every request, so a folder allowed in the window's Settings applies
to a server already running.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localrag.api.body import ApiError
from localrag.core import paths
from localrag.core.config import Settings
from localrag.core.ingest import status
from localrag.core.ingest.events import IngestEvent
from localrag.core.ingest.loaders import display_name
from localrag.core.ingest.queue import expand_paths, path_to_db
from localrag.core.ingest.watch import list_watched_folders

OUTSIDE = (
    "{what} is outside the folders the API may read: the watched folders and those allowed in the window's "
    'Settings (Storage), in settings.json ("api_folders") or with local-rag serve --allow.'
)
LINK_OUTSIDE = "a link to a file outside the folders the API may read"


def real(path: Path | str) -> Path:
    """``path`` with every symbolic link and ``..`` resolved (as far as it exists)."""
    return Path(os.path.realpath(path))


@dataclass(frozen=True)
class AllowedFolders:
    """Real paths of the folders the API may read, and of the data folder it never reads."""

    roots: tuple[Path, ...]
    private: Path

    def allows(self, resolved: Path) -> bool:
        """Whether ``resolved`` (a real path) is in an allowed folder and not in the data folder."""
        if resolved == self.private or resolved.is_relative_to(self.private):
            return False
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)


def allowed_folders(library: Any, extra: Sequence[Path] = ()) -> AllowedFolders:
    """The folders allowed now (blocking: reads ``settings.json`` and the watched folders)."""
    folders: list[Path] = [Path(f) for f in Settings.load().api_folders]
    folders += extra
    with library.pool.connection() as conn:
        folders += list_watched_folders(conn)
    roots = tuple(dict.fromkeys(real(f) for f in folders if f.is_absolute()))
    return AllowedFolders(roots, real(paths.data_dir()))


@dataclass
class Plan:
    """What ``POST /v1/documents`` will do: the files to queue as ``(path, explicit)``, and an event for
    each file left out (links to outside)."""

    files: list[tuple[Path, bool]]
    left_out: list[IngestEvent]


def plan(raw: Sequence[str], allowed: AllowedFolders) -> Plan:
    """The files under the paths ``raw`` (absolute, as checked by the route) that may be read.

    Raises ``ApiError``: 403 when a path is outside the allowed folders (checked for every path before any
    is looked at), 404 when a path inside them does not exist.
    """
    resolved = [real(p) for p in raw]
    for i, path in enumerate(resolved):
        if not allowed.allows(path):
            raise ApiError(403, OUTSIDE.format(what=f"paths[{i}]"))
    out = Plan([], [])
    for given, path in zip(raw, resolved, strict=True):
        if not _exists(path):
            raise ApiError(404, f"No such file or folder: {given}")
        for file, explicit in expand_paths([path]):
            target = real(file)
            if allowed.allows(target):
                out.files.append((target, explicit))
            else:
                shown, name = path_to_db(file)[0], display_name(file)  # as text, whatever its bytes
                out.left_out.append(IngestEvent(None, shown, name, "", status.SKIPPED, message=LINK_OUTSIDE))
    return out


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long, no permission to look: not there, as far as the API can tell
        return False
