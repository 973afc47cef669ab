"""The window's layout kept between runs: its geometry, its docks, the splitters' sizes and whether the chats
list shows, in ``window.ini`` in the data folder (or the file given)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localrag.core import paths
from localrag.gui.qt import QtCore

LAYOUT_VERSION = 1  # bumped when the docks change so much that an older saved state would misplace them


def _settings(file: Path | None) -> QtCore.QSettings:
    path = file or (paths.data_dir() / "window.ini")
    return QtCore.QSettings(str(path), QtCore.QSettings.Format.IniFormat)


def _splitters(window: Any) -> tuple[tuple[str, Any], ...]:
    return (("splitter", window.splitter), ("left_splitter", window.left_splitter))


def restore_layout(window: Any, file: Path | None) -> None:
    """Lay ``window`` (a ``MainWindow``) out as it was saved in ``file``; nothing saved: as built."""
    s = _settings(file)
    geometry = s.value("geometry")
    if geometry is not None:
        window.restoreGeometry(geometry)
    state = s.value("state")
    if state is not None:
        window.restoreState(state, LAYOUT_VERSION)
    for name, splitter in _splitters(window):
        value = s.value(name)
        if value is not None:
            splitter.restoreState(value)
    window.chats_action.setChecked(str(s.value("chats_visible", "true")).lower() != "false")


def save_layout(window: Any, file: Path | None) -> None:
    """Save ``window``'s layout in ``file``."""
    s = _settings(file)
    s.setValue("geometry", window.saveGeometry())
    s.setValue("state", window.saveState(LAYOUT_VERSION))
    for name, splitter in _splitters(window):
        s.setValue(name, splitter.saveState())
    s.setValue("chats_visible", window.chats_action.isChecked())
    s.sync()
