"""A one-line label that shortens its text with "…" to the width it is given, instead of asking for the width
of the whole text (a long chat title would otherwise squeeze the panels beside it)."""

from __future__ import annotations

from localrag.gui.qt import QtCore, QtGui, QtWidgets


class ElidedLabel(QtWidgets.QLabel):
    """A QLabel whose text is elided at the right; the whole text is its tooltip."""

    def __init__(self, text: str = "", parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt override)
        self._full = text
        self.setToolTip(text)
        self._elide()

    def text(self) -> str:
        """The whole text (what is drawn may be shortened)."""
        return self._full

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt override)
        return QtCore.QSize(self.fontMetrics().horizontalAdvance("…") * 4, super().minimumSizeHint().height())

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(self.width(), 1)
        super().setText(self.fontMetrics().elidedText(self._full, QtCore.Qt.TextElideMode.ElideRight, width))
