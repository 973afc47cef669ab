"""Re-embedding in the window: the banner that offers to re-embed the documents lacking vectors from the
active embedding model, its progress and its Cancel, and a run again when a document's details change during
one."""

from __future__ import annotations

from typing import Any

from localrag.gui.qt import QtCore


class ReembedBanner:
    """The "reembed" banner of ``window`` (a ``MainWindow``), driven by its services' re-embedding signals;
    the window's ``reembed_checked`` and ``reembed_finished`` signals are emitted from here."""

    def __init__(self, window: Any) -> None:
        self.window = window
        self.services = window.services
        self._report = False  # the count after a run says how many still lack vectors
        self._again = False  # a document changed while a run was under way: run once more after it

    def start(self) -> None:
        """Embed the chunks of every document that lacks vectors from the active model, in the background."""
        if self.services.reembedding:
            return
        banner = self.window.banners.show_banner(
            "reembed",
            "Re-embedding your documents…",
            level="info",
            action="Cancel",
            on_action=self.services.cancel_reembed,
        )
        banner.set_progress(0, 0)
        self.services.start_reembed()

    def document_changed(self) -> None:
        """A document's saved details changed what its chunks are embedded with: re-embed it (after the run in
        hand, which listed its documents before this edit)."""
        self.services.reembed_count += 1  # this document, besides any the last count found
        if self.services.reembedding:
            self._again = True
        else:
            self.start()

    def checked(self, n: int) -> None:
        banners = self.window.banners
        if not self.services.reembedding:
            if n:
                docs = f"{n} document{'s' if n != 1 else ''}"
                banners.show_banner(
                    "reembed",
                    f"{docs} {'were' if n != 1 else 'was'} indexed by an earlier version or with a different "
                    "embedding model. Re-embed "
                    f"{'them' if n != 1 else 'it'} with the current model; until then "
                    f"{'they are' if n != 1 else 'it is'} searched as indexed (by the previous model's "
                    "vectors where its files are still here).",
                    level="warning",
                    action=f"Re-embed {docs}",
                    on_action=self.window.start_reembed,
                )
            else:
                banners.clear("reembed")
            self.window.reembed_checked.emit(n)
        if self._report:
            self._report = False
            self.window.reembed_finished.emit(n)

    def progress(self, done: int, total: int, title: str) -> None:
        banners = self.window.banners
        banners.show_banner(
            "reembed",
            f"Re-embedding {title}… ({done} of {total} documents)",
            action="Cancel",
            on_action=self.services.cancel_reembed,
        )
        banners.set_progress("reembed", done, total)

    def done(self, message: str) -> None:
        if message:
            self.window.statusBar().showMessage(message, 8000)
        self.window.banners.set_progress("reembed", None)
        self.window.banners.clear("reembed")
        self._report = True
        if self._again:
            self._again = False
            QtCore.QTimer.singleShot(0, self.start)
