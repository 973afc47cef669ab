"""Dragging files over the window: which local paths a drag carries, the "drop to add" sheet, and what an
empty library shows (where to drop)."""

from __future__ import annotations

from localrag.gui import theme
from localrag.gui.qt import QtCore, QtGui, QtWidgets, Signal


def local_paths(mime: QtCore.QMimeData) -> list[str]:
    """The local files and folders in a drag's data."""
    if not mime.hasUrls():
        return []
    return [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]


class DropOverlay(QtWidgets.QWidget):
    """A translucent "drop to add" sheet over the window while files are dragged over it."""

    def __init__(self, parent: QtWidgets.QWidget) -> None:
        super().__init__(parent)
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.hide()

    def paintEvent(self, _event: QtGui.QPaintEvent) -> None:  # noqa: N802 (Qt override)
        c = theme.colors()
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        veil = self.palette().color(QtGui.QPalette.ColorRole.Window)
        veil.setAlpha(225)
        p.fillRect(self.rect(), veil)
        accent = QtGui.QColor(c.info)
        p.setPen(QtGui.QPen(accent, 3, QtCore.Qt.PenStyle.DashLine))
        tint = QtGui.QColor(accent)
        tint.setAlpha(28)
        p.setBrush(tint)
        p.drawRoundedRect(QtCore.QRectF(self.rect()).adjusted(16, 16, -16, -16), 18, 18)
        icon = self.style().standardIcon(QtWidgets.QStyle.StandardPixmap.SP_DialogOpenButton)
        centre = self.rect().center()
        p.drawPixmap(centre.x() - 32, centre.y() - 90, icon.pixmap(64, 64))
        font = QtGui.QFont(self.font())
        font.setPointSizeF(font.pointSizeF() * 1.8)
        font.setBold(True)
        p.setFont(font)
        p.setPen(self.palette().color(QtGui.QPalette.ColorRole.WindowText))
        title = QtCore.QRect(0, centre.y() - 16, self.width(), 44)
        p.drawText(title, QtCore.Qt.AlignmentFlag.AlignCenter, "Drop to add to your library")
        small = QtGui.QFont(self.font())
        small.setPointSizeF(small.pointSizeF() * 1.1)
        p.setFont(small)
        p.setPen(QtGui.QColor(c.muted))
        p.drawText(
            QtCore.QRect(0, centre.y() + 32, self.width(), 28),
            QtCore.Qt.AlignmentFlag.AlignCenter,
            "Files and folders are indexed on this computer · a .gguf file becomes the language model",
        )


class EmptyLibrary(QtWidgets.QWidget):
    """What an empty library shows: where to drop, and a button.

    Signals:
        add_clicked(): the button was pressed.
    """

    add_clicked = Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("No documents yet")
        layout = QtWidgets.QVBoxLayout(self)
        layout.addStretch(1)
        icon = QtWidgets.QLabel(self)
        icon.setPixmap(
            self.style().standardIcon(QtWidgets.QStyle.StandardPixmap.SP_DirOpenIcon).pixmap(48, 48)
        )
        icon.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        text = QtWidgets.QLabel(
            "<p style='font-size:12pt'><b>Drop files or folders here</b></p>"
            "<p>PDF, Word, Markdown, HTML, text and images.<br>They are indexed on this computer.</p>",
            self,
        )
        text.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        text.setWordWrap(True)
        button = QtWidgets.QPushButton("Add documents…", self)
        button.setAccessibleName("Add documents")
        button.clicked.connect(self.add_clicked.emit)
        layout.addWidget(icon)
        layout.addWidget(text)
        row = QtWidgets.QHBoxLayout()
        row.addStretch(1)
        row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(2)
