"""The chat panel's transcript drawn: every turn as HTML (``views.transcript``) in the colours of the scheme
in force, and a pending answer's tokens inserted where they go as they arrive (``ChatPanel`` mixes it in)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from localrag.gui.qt import QtGui
from localrag.gui.views.transcript import STREAM_MARK, turn_html


class TranscriptView:
    """Rendering the transcript; the panel's state it reads is declared here for the checker."""

    turns: list[Any]
    transcript: Any
    _stream_cursor: QtGui.QTextCursor | None

    if TYPE_CHECKING:  # the panel's own (a stub here would hide it)

        def palette(self) -> Any: ...

        def _pending_turn(self) -> Any: ...

    # -- rendering -----------------------------------------------------------------------------------------

    def _colors(self) -> dict[str, str]:
        """The transcript's colours for the scheme in force (see ``transcript.turn_html``)."""
        pal = self.palette()
        dark = pal.color(QtGui.QPalette.ColorRole.Window).lightness() < 128
        try:
            from localrag.gui import theme

            c = theme.colors()
            muted, warning, error = c.muted, c.warning, c.error
        except Exception:  # the theme module is optional for the panel
            muted, warning, error = "#6b7280", "#b45309", "#c53030"
        return {
            "muted": muted,
            "warning": warning,
            "error": error,
            "you_bg": "#26324a" if dark else "#eef3fc",
            "quote_bg": "#2b2a24" if dark else "#faf7ec",
            "quote_bar": "#a8842c" if dark else "#e0b53a",
            "button_bg": pal.color(QtGui.QPalette.ColorRole.Button).name(),
            "button_border": pal.color(QtGui.QPalette.ColorRole.Mid).name(),
            "text": pal.color(QtGui.QPalette.ColorRole.Text).name(),
        }

    def _render(self, *, scroll_to_end: bool = False) -> None:
        """Render every turn; the tokens of a pending answer go where ``STREAM_MARK`` is, and later ones after
        them (``_append_stream``)."""
        bar = self.transcript.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        old = bar.value()
        c = self._colors()
        self._stream_cursor = None
        if not self.turns:
            muted = c["muted"]
            body = (
                f"<div style='color:{muted}; margin-top:40px' align='center'>"
                "<p style='font-size:13pt'>Ask a question about your documents.</p>"
                "<p>Answers quote your documents and cite them as [1], [2]… — click one to see the page."
                "<br>Ctrl+Enter sends · Esc stops · Ctrl+N starts a new chat</p></div>"
            )
            self.transcript.setHtml(body)
            return
        self.transcript.setHtml("".join(turn_html(i, turn, c) for i, turn in enumerate(self.turns)))
        pending = self._pending_turn()
        if pending is not None and pending.streams and pending.answer:
            cursor = self.transcript.document().find(STREAM_MARK)
            if not cursor.isNull():
                cursor.removeSelectedText()
                cursor.insertText(pending.answer)
                self._stream_cursor = cursor
        if scroll_to_end or at_end:
            bar.setValue(bar.maximum())
        else:
            bar.setValue(old)

    def _render_pending(self) -> None:
        self._render(scroll_to_end=True)

    def _append_stream(self, text: str) -> None:
        """Insert a piece of the streamed answer after the pieces before it (the rest of the turn stays)."""
        if self._stream_cursor is None:
            return
        bar = self.transcript.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        self._stream_cursor.insertText(text)
        if at_end:
            bar.setValue(bar.maximum())
