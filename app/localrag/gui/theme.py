"""Light and dark, following the system: a Fusion palette for each, swapped when the system's scheme changes.

``LOCALRAG_THEME=light|dark`` forces one (the screenshot script uses it); anything else follows the system.
Widgets that colour things themselves (banners, document status) ask ``colors()`` at paint time, so a switch
repaints them correctly.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from localrag.core import paths
from localrag.gui.qt import QObject, Qt, QtCore, QtGui, QtWidgets, Signal


@dataclass(frozen=True)
class Colors:
    """The few colours the app adds to the palette."""

    dark: bool
    info: str
    warning: str
    error: str
    success: str
    muted: str
    banner_bg: str
    progress: str


LIGHT = Colors(
    dark=False,
    info="#2563eb",
    warning="#b45309",
    error="#c53030",
    success="#2f855a",
    muted="#6b7280",
    banner_bg="#f1f5f9",
    progress="#3b82f6",
)
DARK = Colors(
    dark=True,
    info="#60a5fa",
    warning="#f6ad55",
    error="#fc8181",
    success="#68d391",
    muted="#9ca3af",
    banner_bg="#1f2937",
    progress="#3b82f6",
)

_current = LIGHT


def colors() -> Colors:
    """The colours of the scheme in force."""
    return _current


def _palette(dark: bool) -> QtGui.QPalette:
    p = QtGui.QPalette()
    C = QtGui.QColor  # noqa: N806
    if dark:
        window, base, alt, text, button = C("#202124"), C("#17181a"), C("#26282b"), C("#e8eaed"), C("#2b2d31")
        highlight, link, disabled = C("#3b82f6"), C("#8ab4f8"), C("#7c7f85")
        mid, shadow, light = C("#3c4043"), C("#0b0c0d"), C("#4a4d52")
    else:
        window, base, alt, text, button = C("#f5f6f8"), C("#ffffff"), C("#f0f2f5"), C("#1f2328"), C("#ffffff")
        highlight, link, disabled = C("#2563eb"), C("#1d4ed8"), C("#9aa0a6")
        mid, shadow, light = C("#d0d4da"), C("#9aa0a6"), C("#ffffff")
    roles = QtGui.QPalette.ColorRole
    for group in (QtGui.QPalette.ColorGroup.Active, QtGui.QPalette.ColorGroup.Inactive):
        p.setColor(group, roles.Window, window)
        p.setColor(group, roles.WindowText, text)
        p.setColor(group, roles.Base, base)
        p.setColor(group, roles.AlternateBase, alt)
        p.setColor(group, roles.Text, text)
        p.setColor(group, roles.Button, button)
        p.setColor(group, roles.ButtonText, text)
        p.setColor(group, roles.ToolTipBase, base)
        p.setColor(group, roles.ToolTipText, text)
        p.setColor(group, roles.PlaceholderText, disabled)
        p.setColor(group, roles.Highlight, highlight)
        p.setColor(group, roles.HighlightedText, C("#ffffff"))
        p.setColor(group, roles.Link, link)
        p.setColor(group, roles.BrightText, C("#ff5555"))
        p.setColor(group, roles.Mid, mid)
        p.setColor(group, roles.Dark, shadow)
        p.setColor(group, roles.Light, light)
        p.setColor(group, roles.Midlight, alt)
        p.setColor(group, roles.Shadow, shadow)
    dis = QtGui.QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        p.setColor(dis, role, disabled)
    p.setColor(dis, roles.Base, window)
    p.setColor(dis, roles.Button, window)
    p.setColor(dis, roles.Highlight, mid)
    return p


def system_is_dark(app: QtWidgets.QApplication) -> bool:
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


class Theme(QObject):
    """Applies the light or dark palette and follows the system's scheme unless one was forced.

    Signals:
        changed(bool): the scheme changed; the argument says whether it is dark.
    """

    changed = Signal(bool)

    def __init__(self, app: QtWidgets.QApplication, forced: str | None = None) -> None:
        super().__init__(app)
        self.app = app
        forced = (forced if forced is not None else os.environ.get("LOCALRAG_THEME", "")).strip().lower()
        self.forced = forced if forced in ("light", "dark") else None
        app.setStyle("Fusion")
        app.styleHints().colorSchemeChanged.connect(self._on_system_changed)
        self.apply(self.forced == "dark" if self.forced else system_is_dark(app))

    @property
    def dark(self) -> bool:
        return _current.dark

    def apply(self, dark: bool) -> None:
        global _current
        _current = DARK if dark else LIGHT
        self.app.setPalette(_palette(dark))
        self.app.setStyleSheet(_style_sheet(_current))
        self.changed.emit(dark)

    def _on_system_changed(self, scheme: Qt.ColorScheme) -> None:
        if self.forced is None:
            self.apply(scheme == Qt.ColorScheme.Dark)


_check_dir: QtCore.QTemporaryDir | None = None


def _check_mark() -> str:
    """A white check mark drawn once into a temporary PNG, for the style sheet's checked box."""
    global _check_dir
    if _check_dir is None:
        _check_dir = QtCore.QTemporaryDir()
    path = _check_dir.filePath("check.png")
    if not QtCore.QFile.exists(path):
        size = 28  # drawn at 2x; the box is 14 px
        pixmap = QtGui.QPixmap(size, size)
        pixmap.fill(Qt.GlobalColor.transparent)
        p = QtGui.QPainter(pixmap)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        pen = QtGui.QPen(
            QtGui.QColor("#ffffff"),
            3.6,
            Qt.PenStyle.SolidLine,
            Qt.PenCapStyle.RoundCap,
            Qt.PenJoinStyle.RoundJoin,
        )
        p.setPen(pen)
        p.drawPolyline([QtCore.QPointF(6.5, 14.5), QtCore.QPointF(11.5, 19.5), QtCore.QPointF(21.5, 8.5)])
        p.end()
        pixmap.save(path)
    return path.replace("\\", "/")


def _style_sheet(c: Colors) -> str:
    border = "#3c4043" if c.dark else "#d0d4da"
    box = "#80868b" if c.dark else "#8a9099"
    base = "#17181a" if c.dark else "#ffffff"
    accent = "#3b82f6" if c.dark else "#2563eb"
    return f"""
        QCheckBox::indicator {{ width: 14px; height: 14px; border: 1px solid {box}; border-radius: 3px;
                               background: {base}; }}
        QCheckBox::indicator:hover {{ border-color: {accent}; }}
        QCheckBox::indicator:checked {{ background: {accent}; border-color: {accent};
                                       image: url({_check_mark()}); }}
        QCheckBox::indicator:disabled {{ border-color: {border}; background: transparent; }}
        QCheckBox::indicator:checked:disabled {{ background: {border}; image: url({_check_mark()}); }}
        QSplitter::handle {{ background: transparent; }}
        QToolTip {{ padding: 4px; }}
        QFrame#panel-header {{ border: none; }}
        QLabel[role="heading"] {{ font-weight: 600; font-size: 11pt; }}
        QLabel[role="muted"] {{ color: {c.muted}; }}
        QTableView {{ border: 1px solid {border}; }}
        QDockWidget::title {{ padding: 4px 6px; }}
    """


def app_icon() -> QtGui.QIcon:
    """The app's icon in every size shipped in ``resources/`` (16 to 512 px); empty when the files are missing
    (logged: the installation is incomplete)."""
    icon = QtGui.QIcon()
    files = paths.icon_files()
    for file in files:
        icon.addFile(str(file))
    if not files:
        logging.getLogger("localrag.gui").warning("no icon files in %s", paths.resources_dir())
    return icon
