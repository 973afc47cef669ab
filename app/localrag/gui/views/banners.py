"""A stack of banners above the window's content: warming up, re-embed needed, database down, no LLM..."""

from __future__ import annotations

from collections.abc import Callable

from localrag.gui.qt import QtWidgets, Signal


class Banner(QtWidgets.QFrame):
    """One message with an optional action button.

    Signals:
        action_clicked(): the button was pressed.
    """

    action_clicked = Signal()

    def __init__(self, key: str, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.setObjectName(f"banner-{key}")
        self.setFrameShape(QtWidgets.QFrame.StyledPanel)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        self.label = QtWidgets.QLabel(self)
        self.label.setWordWrap(True)
        self.button = QtWidgets.QPushButton(self)
        self.button.clicked.connect(self.action_clicked)
        self.button.hide()
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)

    def set_message(self, text: str, action: str | None, level: str) -> None:
        self.label.setText(text)
        self.setAccessibleName(text)
        colors = {"info": "#2d6cdf", "warning": "#b7791f", "error": "#c53030"}
        self.setStyleSheet(
            f"#banner-{self.key} {{ border-left: 4px solid {colors.get(level, colors['info'])}; }}"
        )
        self.button.setVisible(bool(action))
        if action:
            self.button.setText(action)
            self.button.setAccessibleName(action)


class BannerArea(QtWidgets.QWidget):
    """Holds at most one banner per key; ``show_banner`` replaces, ``clear`` removes."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QtWidgets.QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self.banners: dict[str, Banner] = {}

    def show_banner(self, key: str, text: str, *, action: str | None = None,
                    on_action: Callable[[], None] | None = None, level: str = "info") -> Banner:
        banner = self.banners.get(key)
        if banner is None:
            banner = Banner(key, self)
            self.banners[key] = banner
            self._layout.addWidget(banner)
        try:
            banner.action_clicked.disconnect()
        except (RuntimeError, TypeError):
            pass
        if on_action:
            banner.action_clicked.connect(on_action)
        banner.set_message(text, action, level)
        banner.show()
        return banner

    def clear(self, key: str) -> None:
        banner = self.banners.pop(key, None)
        if banner is not None:
            banner.hide()
            banner.deleteLater()

    def text(self, key: str) -> str | None:
        banner = self.banners.get(key)
        return banner.label.text() if banner else None
