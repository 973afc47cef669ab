"""A stack of banners above the window's content: warming up, re-embed needed, embedding worker failed,
database unavailable, no language model. Each has at most one action button, and optionally a progress bar."""

from __future__ import annotations

from collections.abc import Callable

from localrag.gui import theme
from localrag.gui.qt import QtCore, QtWidgets, Signal

_ICONS = {
    "info": QtWidgets.QStyle.StandardPixmap.SP_MessageBoxInformation,
    "warning": QtWidgets.QStyle.StandardPixmap.SP_MessageBoxWarning,
    "error": QtWidgets.QStyle.StandardPixmap.SP_MessageBoxCritical,
}


class Banner(QtWidgets.QFrame):
    """One message with an optional action button and an optional progress bar.

    Signals:
        action_clicked(): the button was pressed.
    """

    action_clicked = Signal()

    def __init__(self, key: str, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.level = "info"
        self._styling = False
        self.on_action: Callable[[], None] | None = None
        self.setObjectName(f"banner-{key}")
        self.setAccessibleDescription("Notice")
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 8, 6)
        layout.setSpacing(10)
        self.icon = QtWidgets.QLabel(self)
        self.icon.setFixedSize(18, 18)
        self.label = QtWidgets.QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QtWidgets.QProgressBar(self)
        self.progress.setFixedWidth(160)
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.button = QtWidgets.QPushButton(self)
        self.button.clicked.connect(self._clicked)
        self.button.hide()
        layout.addWidget(self.icon, 0, QtCore.Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.progress)
        layout.addWidget(self.button)

    def _clicked(self) -> None:
        self.action_clicked.emit()
        if self.on_action is not None:
            self.on_action()

    def set_message(self, text: str, action: str | None, level: str) -> None:
        self.level = level if level in _ICONS else "info"
        self.label.setText(text)
        self.setAccessibleName(text)
        self.button.setVisible(bool(action))
        if action:
            self.button.setText(action)
            self.button.setAccessibleName(action)
        self._restyle()

    def set_progress(self, done: int | None, total: int = 0) -> None:
        """Show a progress bar (``total`` 0: busy), or hide it with ``done=None``."""
        if done is None:
            self.progress.hide()
            return
        self.progress.setRange(0, max(0, total))
        if total:
            self.progress.setValue(min(done, total))
        self.progress.show()

    def _restyle(self) -> None:
        self._styling = True
        try:
            c = theme.colors()
            edge = {"info": c.info, "warning": c.warning, "error": c.error}[self.level]
            self.setStyleSheet(
                f"#banner-{self.key} {{ background: {c.banner_bg}; border: none; "
                f"border-left: 4px solid {edge}; border-radius: 3px; }}"
            )
            icon = self.style().standardIcon(_ICONS[self.level])
            self.icon.setPixmap(icon.pixmap(18, 18))
        finally:
            self._styling = False

    def changeEvent(self, event: QtCore.QEvent) -> None:  # noqa: N802 (Qt override)
        if event.type() == QtCore.QEvent.Type.PaletteChange and not self._styling:
            self._restyle()
        super().changeEvent(event)


class BannerArea(QtWidgets.QWidget):
    """Holds at most one banner per key; ``show_banner`` replaces, ``clear`` removes.

    Signals:
        changed(str): the banner with this key was shown, changed or cleared.
    """

    changed = Signal(str)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Notices")
        self._layout = QtWidgets.QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self.banners: dict[str, Banner] = {}

    def show_banner(
        self,
        key: str,
        text: str,
        *,
        action: str | None = None,
        on_action: Callable[[], None] | None = None,
        level: str = "info",
    ) -> Banner:
        banner = self.banners.get(key)
        if banner is None:
            banner = Banner(key, self)
            self.banners[key] = banner
            self._layout.addWidget(banner)
        banner.on_action = on_action
        banner.set_message(text, action, level)
        banner.show()
        self.changed.emit(key)
        return banner

    def set_progress(self, key: str, done: int | None, total: int = 0) -> None:
        banner = self.banners.get(key)
        if banner is not None:
            banner.set_progress(done, total)

    def clear(self, key: str) -> None:
        banner = self.banners.pop(key, None)
        if banner is not None:
            banner.hide()
            banner.deleteLater()
            self.changed.emit(key)

    def text(self, key: str) -> str | None:
        banner = self.banners.get(key)
        return banner.label.text() if banner else None

    def banner(self, key: str) -> Banner | None:
        return self.banners.get(key)

    def keys(self) -> list[str]:
        return list(self.banners)
