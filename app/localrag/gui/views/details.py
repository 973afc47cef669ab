"""Documents → Details: what a document is (title, organisation, kind, period, date, the domain pack that acts
on it), as found when it was indexed or set by hand, and where each value came from.

The dialog only shows and collects: the window loads the metadata and saves the edits off the UI thread
(``core.ingest.metadata.edit``), and re-embeds the chunks whose context changed.
"""

from __future__ import annotations

from typing import Any

from localrag.core import hooks
from localrag.core.ingest.metadata import shown_title
from localrag.gui.qt import QtWidgets, Signal

# (metadata key, label, what to type)
FIELDS = (
    ("title", "Title", "the document's title"),
    ("organization", "Organisation", "e.g. 3M Company"),
    ("kind", "Kind", "e.g. 10-K annual report, manual, contract"),
    ("period", "Period", "e.g. fiscal year 2018 (FY2018)"),
    ("date", "Date", "e.g. 2018-12-31"),
)


class DocumentDetailsDialog(QtWidgets.QDialog):
    """Edit one document's metadata.

    Args:
        doc_id: the document.
        file_name: shown in the heading.
        title: its stored title (the title shown is an edited one when there is one).
        meta: ``documents.meta`` (fields, ``sources``, ``edited``).

    Signals:
        save_requested(int, dict): the document id and the edits (``field: value``; ``""`` gives back the
            value found when indexing). Emitted on Save only when something changed.
    """

    save_requested = Signal(int, dict)

    def __init__(
        self,
        doc_id: int,
        file_name: str,
        title: str,
        meta: dict[str, Any],
        parent: QtWidgets.QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.doc_id = doc_id
        self.setWindowTitle(f"Details of {file_name}")
        self.setObjectName("details-dialog")
        self.setAccessibleName("Document details")
        self.setMinimumWidth(520)
        edited = dict(meta.get("edited") or {})
        sources = dict(meta.get("sources") or {})
        self._initial: dict[str, str] = {}
        self._reset: set[str] = set()
        self.fields: dict[str, QtWidgets.QLineEdit] = {}
        self.origins: dict[str, QtWidgets.QLabel] = {}
        self.reset_buttons: dict[str, QtWidgets.QToolButton] = {}

        layout = QtWidgets.QVBoxLayout(self)
        intro = QtWidgets.QLabel(
            "What this document is. Questions that name it (“the 2018 report”, “Acme’s contract”) search it "
            "first, and every passage is searched together with this line. Clear a field to use what was "
            "found when it was indexed.",
            self,
        )
        intro.setWordWrap(True)
        intro.setProperty("role", "muted")
        layout.addWidget(intro)
        form = QtWidgets.QGridLayout()
        form.setColumnStretch(1, 1)
        for row, (key, label, hint) in enumerate(FIELDS):
            value = shown_title(title, meta) if key == "title" else str(meta.get(key) or "")
            self._initial[key] = value
            edit = QtWidgets.QLineEdit(value, self)
            edit.setAccessibleName(label)
            edit.setPlaceholderText(f"as found when indexed ({hint})")
            edit.setClearButtonEnabled(True)
            edit.textEdited.connect(lambda _t, k=key: self._touched(k))
            name = QtWidgets.QLabel(f"&{label}:", self)
            name.setBuddy(edit)
            origin = QtWidgets.QLabel(self)
            origin.setProperty("role", "muted")
            reset = QtWidgets.QToolButton(self)
            reset.setText("Reset")
            reset.setToolTip(f"Use the {label.lower()} found when the document was indexed")
            reset.setAccessibleName(f"Reset {label.lower()}")
            reset.setAutoRaise(True)
            reset.clicked.connect(lambda _c=False, k=key: self._reset_field(k))
            is_edited = key in edited
            origin.setText(_origin(key, is_edited, sources.get(key, "")))
            reset.setEnabled(is_edited)
            form.addWidget(name, row * 2, 0)
            form.addWidget(edit, row * 2, 1)
            form.addWidget(reset, row * 2, 2)
            form.addWidget(origin, row * 2 + 1, 1, 1, 2)
            self.fields[key] = edit
            self.origins[key] = origin
            self.reset_buttons[key] = reset
        # The domain pack: the one found with evidence when indexed, one a person turns on, or none.
        row = len(FIELDS)
        self.domain = QtWidgets.QComboBox(self)
        self.domain.setAccessibleName("Domain pack")
        self.domain.addItem("As found when indexed", "")
        for pack in hooks.packs():
            self.domain.addItem(pack, pack)
        self.domain.addItem("None (no pack acts on it)", hooks.NO_DOMAIN)
        self._initial_domain = str(edited.get("domain") or "")
        self.domain.setCurrentIndex(max(0, self.domain.findData(self._initial_domain)))
        domain_name = QtWidgets.QLabel("&Domain pack:", self)
        domain_name.setBuddy(self.domain)
        self.domain_origin = QtWidgets.QLabel(_domain_origin(meta), self)
        self.domain_origin.setProperty("role", "muted")
        self.domain_origin.setWordWrap(True)
        form.addWidget(domain_name, row * 2, 0)
        form.addWidget(self.domain, row * 2, 1)
        form.addWidget(self.domain_origin, row * 2 + 1, 1, 1, 2)
        layout.addLayout(form)
        buttons = QtWidgets.QDialogButtonBox(
            QtWidgets.QDialogButtonBox.StandardButton.Save | QtWidgets.QDialogButtonBox.StandardButton.Cancel,
            self,
        )
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.fields["organization"].setFocus()

    def edits(self) -> dict[str, str]:
        """What changed: ``field: value``, or ``field: ""`` to give back the value found when indexing."""
        out: dict[str, str] = {}
        for key, edit in self.fields.items():
            value = " ".join(edit.text().split())
            if key in self._reset and not value:
                out[key] = ""
            elif value != self._initial[key]:
                out[key] = value
        domain = str(self.domain.currentData() or "")
        if domain != self._initial_domain:
            out["domain"] = domain
        return out

    def _touched(self, key: str) -> None:
        self._reset.discard(key)
        self.reset_buttons[key].setEnabled(True)

    def _reset_field(self, key: str) -> None:
        self.fields[key].clear()
        self._reset.add(key)
        self.reset_buttons[key].setEnabled(False)
        self.origins[key].setText("found when indexed (shown after saving)")

    def _save(self) -> None:
        edits = self.edits()
        if edits:
            self.save_requested.emit(self.doc_id, edits)
        self.accept()


def _origin(key: str, edited: bool, source: str) -> str:
    if edited:
        return "set by hand"
    if key == "title":
        return "from the document"
    return f"found in the {source}" if source else "nothing found"


def _domain_origin(meta: dict[str, Any]) -> str:
    domain = str(meta.get("domain") or "")
    evidence = str((meta.get("sources") or {}).get("domain") or "")
    if not domain or domain == hooks.NO_DOMAIN:
        return "No domain pack acts on it" + (" (set by hand)" if domain else "") + "."
    if evidence == "edited":
        return f"The {domain} pack acts on it: set by hand."
    return f"The {domain} pack acts on it, found when indexed: {evidence}."
