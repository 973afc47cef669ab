"""The chat panel's links: a citation, a source, a quoted sentence, a checked sentence or a cell of a
computation clicked in the transcript opens the ``SourceViewer`` on exactly that place (``ChatPanel`` mixes
this in; the links are listed in ``views.transcript``)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from localrag.gui.qt import QtCore
from localrag.gui.views.sources import SourceRef, SourceViewer
from localrag.gui.views.transcript import checked_ref, figure_ref, span_ref


class ChatLinks:
    """What a link of the transcript opens; the panel's state it reads is declared here for the checker."""

    turns: list[Any]
    library: Any
    viewers: list[SourceViewer]
    source_opened: Any
    test_question_requested: Any

    if TYPE_CHECKING:  # the panel's own (a stub here would hide it)

        def ask_model_alone(self, turn_index: int) -> bool: ...

        def window(self) -> Any: ...

    # -- sources -------------------------------------------------------------------------------------------

    def _on_anchor(self, url: QtCore.QUrl) -> None:
        kind, _, rest = url.toString().partition(":")
        if kind == "alone":
            with contextlib.suppress(ValueError):
                self.ask_model_alone(int(rest))
            return
        if kind == "check":
            with contextlib.suppress(ValueError):
                self.test_question_requested.emit(int(rest))
            return
        opener = {
            "cite": self.open_source,
            "src": self.open_source,
            "ev": self.open_evidence,
            "gen": self.open_checked,
            "fig": self.open_figure,
        }.get(kind)
        turn_index, _, number = rest.partition(":")
        if opener is not None:
            with contextlib.suppress(ValueError):
                opener(int(turn_index), int(number))

    def open_source(self, turn_index: int, number: int) -> SourceViewer | None:
        """Open the viewer on source ``number`` (1-based) of turn ``turn_index``; None if there is no such."""
        if not 0 <= turn_index < len(self.turns):
            return None
        turn = self.turns[turn_index]
        if not turn.valid(number):
            return None
        return self._open_viewer(turn.sources[number - 1])

    def open_evidence(self, turn_index: int, index: int) -> SourceViewer | None:
        """Open the viewer on quoted sentence ``index`` (0-based) of turn ``turn_index``, with exactly that
        sentence highlighted (the whole source when its place in the page is not known)."""
        if not 0 <= turn_index < len(self.turns):
            return None
        ref = span_ref(self.turns[turn_index], index)
        return self._open_viewer(ref) if ref is not None else None

    def open_checked(self, turn_index: int, index: int) -> SourceViewer | None:
        """Open the viewer on the source sentence that generated sentence ``index`` of turn ``turn_index``
        matched when it was checked."""
        if not 0 <= turn_index < len(self.turns):
            return None
        ref = checked_ref(self.turns[turn_index], index)
        return self._open_viewer(ref) if ref is not None else None

    def open_figure(self, turn_index: int, index: int) -> SourceViewer | None:
        """Open the viewer on cell ``index`` of turn ``turn_index``'s computation, the cell and its column
        heading outlined."""
        if not 0 <= turn_index < len(self.turns):
            return None
        ref = figure_ref(self.turns[turn_index], index)
        return self._open_viewer(ref) if ref is not None else None

    def _open_viewer(self, ref: SourceRef) -> SourceViewer:
        viewer = SourceViewer(self.library, ref, self.window())
        viewer.setWindowFlag(QtCore.Qt.WindowType.Window, True)
        self.viewers.append(viewer)
        viewer.destroyed.connect(lambda *_: self.viewers.remove(viewer) if viewer in self.viewers else None)
        viewer.show()
        self.source_opened.emit(viewer)
        return viewer
