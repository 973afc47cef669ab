"""The Settings dialog (Ctrl+,): models, retrieval, generation, storage and the folders the local API may
read, saved to ``settings.json``.

The data folder itself cannot be recorded inside the data folder, so it is kept in the user's Qt settings
(``data_folder_choice``) and applied at the next start, before anything opens it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from localrag.core import paths
from localrag.core.config import Settings
from localrag.core.retrieve import MODES
from localrag.gui.qt import QtCore, QtWidgets, Signal
from localrag.gui.tasks import Op

MODE_LABELS = {
    "hybrid": "Hybrid: meaning and keywords, fused",
    "vector": "Meaning only (vectors)",
    "keyword": "Keywords only (BM25)",
}
# What leads an answer (``Settings.answer_lead``): the choice, and a line that says what it does.
LEAD_LABELS = {
    "auto": "Automatic",
    "sources": "The quoted sources",
    "model": "The model's answer (checked)",
}
LEAD_HINTS = {  # on two short lines: a wrapped label in a form is given too little height
    "auto": "The quoted sources for small models,\nthe model's answer for large ones.",
    "sources": "The sentences of your documents that answer\nthe question are the answer.",
    "model": "The model writes the answer; each sentence\nis checked against your documents.",
}
# Settings that only take effect when the app starts again.
RESTART_FIELDS = ("database_url",)


def _prefs() -> QtCore.QSettings:
    return QtCore.QSettings(
        QtCore.QSettings.Format.IniFormat, QtCore.QSettings.Scope.UserScope, "LocalRAG", "Local RAG"
    )


def data_folder_choice() -> str:
    """The data folder chosen in Settings, or "" for the default."""
    return str(_prefs().value("data_folder", "") or "")


def save_data_folder_choice(folder: str) -> None:
    prefs = _prefs()
    if folder:
        prefs.setValue("data_folder", folder)
    else:
        prefs.remove("data_folder")
    prefs.sync()


def apply_data_folder_choice() -> None:
    """Point ``LOCALRAG_HOME`` at the chosen data folder, unless the environment already names one."""
    choice = data_folder_choice()
    if choice and not os.environ.get("LOCALRAG_HOME"):
        os.environ["LOCALRAG_HOME"] = choice


class _PathField(QtWidgets.QWidget):
    """A line edit with a Browse… button for a file or a folder."""

    def __init__(
        self,
        name: str,
        *,
        folder: bool,
        placeholder: str,
        file_filter: str = "",
        parent: QtWidgets.QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.folder = folder
        self.file_filter = file_filter
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.edit = QtWidgets.QLineEdit(self)
        self.edit.setPlaceholderText(placeholder)
        self.edit.setAccessibleName(name)
        self.edit.setClearButtonEnabled(True)
        self.button = QtWidgets.QPushButton("Browse…", self)
        self.button.setAccessibleName(f"Choose {name.lower()}")
        self.button.clicked.connect(self._browse)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.button)

    def text(self) -> str:
        return self.edit.text().strip()

    def set_text(self, text: str) -> None:
        self.edit.setText(text)

    def _browse(self) -> None:
        start = self.text() or str(Path.home())
        if self.folder:
            chosen = QtWidgets.QFileDialog.getExistingDirectory(self, self.edit.accessibleName(), start)
        else:
            chosen, _ = QtWidgets.QFileDialog.getOpenFileName(
                self, self.edit.accessibleName(), start, self.file_filter
            )
        if chosen:
            self.edit.setText(chosen)


class _FolderList(QtWidgets.QWidget):
    """A short list of folders with Add folder… and Remove buttons beside it."""

    def __init__(self, name: str, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.list = QtWidgets.QListWidget(self)
        self.list.setAccessibleName(name)
        self.list.setMaximumHeight(self.list.fontMetrics().height() * 3 + 10)
        self.add_button = QtWidgets.QPushButton("Add folder…", self)
        self.add_button.setAccessibleName(f"Add to {name.lower()}")
        self.add_button.clicked.connect(self._browse)
        self.remove_button = QtWidgets.QPushButton("Remove", self)
        self.remove_button.setAccessibleName(f"Remove the selected folder from {name.lower()}")
        self.remove_button.clicked.connect(self.remove_selected)
        self.list.currentRowChanged.connect(self._sync)
        buttons = QtWidgets.QVBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        self._sync()

    def folders(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def set_folders(self, folders: list[str]) -> None:
        self.list.clear()
        for folder in folders:
            self.add_folder(folder)
        self._sync()

    def add_folder(self, folder: str) -> None:
        """Add ``folder`` (as an absolute path) unless it is listed already."""
        folder = str(Path(folder).absolute())
        if folder not in self.folders():
            self.list.addItem(folder)
        self.list.setCurrentRow(self.folders().index(folder))

    def remove_selected(self) -> None:
        row = self.list.currentRow()
        if row >= 0:
            self.list.takeItem(row)
        self._sync()

    def _browse(self) -> None:
        chosen = QtWidgets.QFileDialog.getExistingDirectory(
            self, self.list.accessibleName(), str(Path.home())
        )
        if chosen:
            self.add_folder(chosen)

    def _sync(self) -> None:
        self.remove_button.setEnabled(self.list.currentRow() >= 0)


class SettingsDialog(QtWidgets.QDialog):
    """Edit and save the settings.

    Args:
        settings: the settings in force; ``accept`` updates this object in place and saves it.
        settings_path: where to save (default: ``settings.json`` in the data folder).

    Signals:
        applied(list): the settings were saved; the names of those that changed (``"data_folder"`` for the
            data folder).
        save_failed(str): they could not be saved (the message says why); they stay in force until exit.
    """

    applied = Signal(list)
    save_failed = Signal(str)

    def __init__(
        self,
        settings: Settings,
        parent: QtWidgets.QWidget | None = None,
        *,
        settings_path: Path | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self.settings_path = settings_path
        self.setWindowTitle("Settings")
        self.setObjectName("settings-dialog")
        self.setAccessibleName("Settings")
        self.setMinimumWidth(580)

        self.embedding_model_dir = _PathField(
            "Embedding model folder", folder=True, placeholder="Bundled: all-MiniLM-L6-v2 (int8)"
        )
        self.embedding_model_dir.setToolTip(
            "A folder with model.onnx and tokenizer.json. Changing the model "
            "means re-embedding your documents; the old vectors answer until then."
        )
        self.gguf_path = _PathField(
            "Language model file",
            folder=False,
            placeholder="Bundled: SmolLM2-135M-Instruct",
            file_filter="GGUF models (*.gguf)",
        )
        self.gguf_path.setToolTip("Any GGUF chat model. You can also drop a .gguf file on the window.")

        self.k = self._spin("Passages per answer (k)", 1, 50, "How many passages retrieval returns at most.")
        self.floor = self._dspin(
            "Relevance floor",
            0.0,
            1.0,
            0.01,
            2,
            "Passages whose vector similarity is below this are not used (0: no floor).",
        )
        self.mode = QtWidgets.QComboBox()
        self.mode.setAccessibleName("Retrieval mode")
        for value in MODES:
            self.mode.addItem(MODE_LABELS.get(value, value), value)
        self.context_tokens = self._spin(
            "Context budget",
            100,
            32000,
            "Tokens of passages packed into the prompt.",
            step=100,
            suffix=" tokens",
        )
        self.ef_search = self._spin(
            "HNSW ef_search",
            10,
            1000,
            "Candidates the vector index visits; higher finds more of the true nearest neighbours, slower.",
            step=10,
        )

        self.temperature = self._dspin(
            "Temperature", 0.0, 2.0, 0.05, 2, "0 answers the same way every time; higher is more varied."
        )
        self.max_tokens = self._spin(
            "Longest answer", 16, 8192, "Tokens the model may generate per answer.", step=16, suffix=" tokens"
        )
        self.prepare_while_typing = QtWidgets.QCheckBox("Start reading while I type")
        self.prepare_while_typing.setAccessibleName("Prepare the answer while the question is typed")
        self.prepare_while_typing.setToolTip(
            "When typing pauses, search and let the model read the question so far, so the answer starts as "
            "soon as it is sent. Uses the processor during pauses."
        )
        self.answer_lead = QtWidgets.QComboBox()
        self.answer_lead.setAccessibleName("What leads the answer")
        for i, (value, label) in enumerate(LEAD_LABELS.items()):
            self.answer_lead.addItem(label, value)
            tip = " ".join(LEAD_HINTS[value].split())
            self.answer_lead.setItemData(i, tip, QtCore.Qt.ItemDataRole.ToolTipRole)
        self.lead_hint = QtWidgets.QLabel("")
        self.lead_hint.setProperty("role", "muted")
        self.reword = QtWidgets.QCheckBox("Let the model reword the quoted answer")
        self.reword.setAccessibleName("Let the model reword the quoted answer")
        self.reword.setToolTip(
            "When the quoted sources lead, the model may add a short rewording; only the sentences your "
            "documents support are kept."
        )
        self.answer_lead.currentIndexChanged.connect(self._sync_reword)
        cores = os.cpu_count() or 1
        self.threads = self._spin("Threads", 0, 256, "CPU threads for the language model.")
        self.threads.setSpecialValueText(f"Automatic ({cores})")

        self.data_folder = _PathField("Data folder", folder=True, placeholder=str(paths.data_dir()))
        self.data_folder.setToolTip(
            "Where the database, models, logs and settings live. Takes effect at the "
            "next start; the old folder is left as it is."
        )
        self.database_url = QtWidgets.QLineEdit()
        self.database_url.setAccessibleName("External database URL")
        self.database_url.setPlaceholderText("Empty: the embedded PostgreSQL in the data folder")
        self.database_url.setToolTip(
            "postgresql://user:password@host:5432/dbname — any PostgreSQL with "
            "pgvector. Takes effect at the next start."
        )
        self.database_url.setClearButtonEnabled(True)
        self.api_folders = _FolderList("Folders the local API may read")
        self.api_folders.setToolTip(
            "Programs using the local API (File → Local API server, local-rag serve) may add files from "
            "these folders and the watched folders, and from nowhere else."
        )

        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(
            self._group(
                "Models", [("Embedding model", self.embedding_model_dir), ("Language model", self.gguf_path)]
            )
        )
        layout.addWidget(
            self._group(
                "Retrieval",
                [
                    ("Mode", self.mode),
                    ("Passages (k)", self.k),
                    ("Relevance floor", self.floor),
                    ("Context budget", self.context_tokens),
                    ("ef_search", self.ef_search),
                ],
            )
        )
        layout.addWidget(
            self._group(
                "Answers",
                [
                    ("Temperature", self.temperature),
                    ("Longest answer", self.max_tokens),
                    ("Threads", self.threads),
                    ("Read ahead", self.prepare_while_typing),
                    ("What leads the answer", self.answer_lead),
                    ("", self.lead_hint),
                    ("Rewording", self.reword),
                ],
            )
        )
        layout.addWidget(
            self._group(
                "Storage",
                [
                    ("Data folder", self.data_folder),
                    ("External database", self.database_url),
                    ("Local API may read", self.api_folders),
                ],
            )
        )
        note = QtWidgets.QLabel(
            "The data folder and the database take effect the next time Local RAG starts."
        )
        note.setProperty("role", "muted")
        note.setWordWrap(True)
        layout.addWidget(note)
        self.buttons = QtWidgets.QDialogButtonBox(
            QtWidgets.QDialogButtonBox.StandardButton.Save
            | QtWidgets.QDialogButtonBox.StandardButton.Cancel
            | QtWidgets.QDialogButtonBox.StandardButton.RestoreDefaults,
            self,
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QtWidgets.QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(
            lambda: self.load(Settings(), "")
        )
        layout.addWidget(self.buttons)
        self._initial_folder = data_folder_choice()
        self.load(settings, self._initial_folder)

    def _spin(
        self, name: str, lo: int, hi: int, tip: str, *, step: int = 1, suffix: str = ""
    ) -> QtWidgets.QSpinBox:
        w = QtWidgets.QSpinBox()
        w.setRange(lo, hi)
        w.setSingleStep(step)
        w.setSuffix(suffix)
        w.setAccessibleName(name)
        w.setToolTip(tip)
        return w

    def _dspin(
        self, name: str, lo: float, hi: float, step: float, decimals: int, tip: str
    ) -> QtWidgets.QDoubleSpinBox:
        w = QtWidgets.QDoubleSpinBox()
        w.setRange(lo, hi)
        w.setSingleStep(step)
        w.setDecimals(decimals)
        w.setAccessibleName(name)
        w.setToolTip(tip)
        return w

    def _group(self, title: str, rows: list[tuple[str, QtWidgets.QWidget]]) -> QtWidgets.QGroupBox:
        box = QtWidgets.QGroupBox(title, self)
        form = QtWidgets.QFormLayout(box)
        form.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for label, widget in rows:
            if not label:  # a note under the field above it
                form.addRow(QtWidgets.QLabel("", box), widget)
                continue
            lab = QtWidgets.QLabel(label + ":", box)
            lab.setBuddy(widget)
            form.addRow(lab, widget)
        return box

    def _sync_reword(self) -> None:
        """The hint follows the choice; rewording applies when the quoted sources lead (not the model)."""
        lead = self.answer_lead.currentData()
        self.lead_hint.setText(LEAD_HINTS.get(lead, ""))
        self.reword.setEnabled(lead != "model")

    # -- values -------------------------------------------------------------------------------------------

    def load(self, s: Settings, data_folder: str) -> None:
        """Show ``s`` (and the chosen data folder) in the fields."""
        self.embedding_model_dir.set_text(s.embedding_model_dir)
        self.gguf_path.set_text(s.gguf_path)
        self.k.setValue(s.k)
        self.floor.setValue(s.floor)
        i = self.mode.findData(s.mode)
        if i < 0:
            self.mode.addItem(s.mode, s.mode)
            i = self.mode.count() - 1
        self.mode.setCurrentIndex(i)
        self.context_tokens.setValue(s.context_tokens)
        self.ef_search.setValue(s.ef_search)
        self.temperature.setValue(s.temperature)
        self.max_tokens.setValue(s.max_tokens)
        self.threads.setValue(s.threads)
        self.prepare_while_typing.setChecked(bool(s.prepare_while_typing))
        lead = str(s.answer_lead or "auto").lower()
        i = self.answer_lead.findData(lead)
        if i < 0:
            self.answer_lead.addItem(lead, lead)
            i = self.answer_lead.count() - 1
        self.answer_lead.setCurrentIndex(i)
        self.reword.setChecked(bool(s.reword))
        self._sync_reword()
        self.data_folder.set_text(data_folder)
        self.database_url.setText(s.database_url)
        self.api_folders.set_folders(s.api_folders)

    def values(self) -> Settings:
        """A copy of the settings with the fields' values."""
        return dataclasses.replace(
            self.settings,
            embedding_model_dir=self.embedding_model_dir.text(),
            gguf_path=self.gguf_path.text(),
            k=self.k.value(),
            floor=round(self.floor.value(), 4),
            mode=str(self.mode.currentData()),
            context_tokens=self.context_tokens.value(),
            ef_search=self.ef_search.value(),
            temperature=round(self.temperature.value(), 4),
            max_tokens=self.max_tokens.value(),
            threads=self.threads.value(),
            prepare_while_typing=self.prepare_while_typing.isChecked(),
            answer_lead=str(self.answer_lead.currentData()),
            reword=self.reword.isChecked(),
            database_url=self.database_url.text().strip(),
            api_folders=self.api_folders.folders(),
        )

    def accept(self) -> None:
        """Apply the fields to the settings in force and save them off the UI thread; then ``applied``."""
        new = self.values()
        changed = [
            f.name
            for f in dataclasses.fields(Settings)
            if getattr(new, f.name) != getattr(self.settings, f.name)
        ]
        for name in changed:
            setattr(self.settings, name, getattr(new, name))
        folder = self.data_folder.text()
        folder_changed = folder != self._initial_folder
        if folder_changed:
            changed.append("data_folder")
        snapshot = dataclasses.replace(self.settings)
        path = self.settings_path

        def save() -> None:
            snapshot.save(path)
            if folder_changed:
                save_data_folder_choice(folder)

        super().accept()
        Op(save, owner=self).success(lambda _r: self.applied.emit(changed)).failure(
            lambda msg, _k: self.save_failed.emit(msg)
        ).run_in_background()
