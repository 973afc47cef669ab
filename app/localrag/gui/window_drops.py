"""Files and folders dropped anywhere on the window, and the window's own keys kept from text fields: an event
filter on the application (``WindowEvents``), so a drop on any view of the window reaches it."""

from __future__ import annotations

from typing import Any

from localrag.gui.qt import QtCore, QtGui, QtWidgets
from localrag.gui.views.drop_overlay import local_paths

DRAG_EVENTS = (
    QtCore.QEvent.Type.DragEnter,
    QtCore.QEvent.Type.DragMove,
    QtCore.QEvent.Type.Drop,
    QtCore.QEvent.Type.DragLeave,
)


class WindowEvents(QtCore.QObject):
    """The application's event filter for ``window`` (a ``MainWindow``): a drag over the window shows its
    overlay and a drop indexes what was dropped (``window.add_paths``), except on the collections list (a
    folder dropped on a collection joins it); the window's menu keys (Ctrl+D) go to its menu, not to a text
    field."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt override)
        window = self.window
        kind = event.type()
        if (
            kind == QtCore.QEvent.Type.ShortcutOverride
            and isinstance(event, QtGui.QKeyEvent)
            and self._is_window_key(event)
            and isinstance(obj, QtWidgets.QWidget)
            and window.isAncestorOf(obj)
        ):
            # A text field would take Ctrl+D as "delete" (X11's key binding); the window's menu gets it.
            event.ignore()
            return True
        if (
            kind in DRAG_EVENTS
            and isinstance(obj, QtWidgets.QWidget)
            and (obj is window or window.isAncestorOf(obj))
            and not window.collections_panel.isAncestorOf(obj)  # a folder dropped on a collection joins it
        ):
            return self._drag_event(event)
        return super().eventFilter(obj, event)

    def _is_window_key(self, event: QtGui.QKeyEvent) -> bool:
        pressed = QtGui.QKeySequence(event.keyCombination())
        return any(
            pressed.matches(key) == QtGui.QKeySequence.SequenceMatch.ExactMatch
            for key in self.window.dev_action.shortcuts()
        )

    def _drag_event(self, event: QtCore.QEvent) -> bool:
        window, overlay = self.window, self.window.overlay
        kind = event.type()
        if kind == QtCore.QEvent.Type.DragLeave:
            if not window.rect().contains(window.mapFromGlobal(QtGui.QCursor.pos())):
                overlay.hide()
            return False
        if not isinstance(event, QtGui.QDropEvent):  # drag enter and drag move events are drop events too
            return False
        paths = local_paths(event.mimeData())
        if not paths:
            return False
        if kind == QtCore.QEvent.Type.Drop:
            event.setDropAction(QtCore.Qt.DropAction.CopyAction)
            event.accept()
            overlay.hide()
            window.add_paths(paths)
            return True
        event.setDropAction(QtCore.Qt.DropAction.CopyAction)
        event.accept()
        if kind == QtCore.QEvent.Type.DragEnter:
            overlay.setGeometry(window.rect())
            overlay.raise_()
            overlay.show()
        return True
