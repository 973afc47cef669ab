"""The local HTTP API beside the window: ``local-rag serve`` in a child process that this object owns.

The window owns the data folder, so the server attaches to its database as a guest, as the command-line
tools do. Starting reads the server's first lines for its address; stopping sends it SIGTERM (it ends its open
requests and exits) and kills it if it has not ended in a few seconds. Shutdown always stops it.
"""

from __future__ import annotations

import logging
import re
import sys

from localrag.gui.qt import QObject, QtCore, Signal

log = logging.getLogger("localrag.gui.api")

STOP_WAIT_MS = 8000
_ADDRESS = re.compile(r"Local RAG API on (http://\S+)")


class ApiProcess(QObject):
    """One ``local-rag serve`` child process.

    Signals:
        started(str): the server listens at this address (``http://127.0.0.1:PORT/v1``).
        stopped(str): the server ended: empty when asked to stop, else why (its last error line).
    """

    started = Signal(str)
    stopped = Signal(str)

    def __init__(self, port: int, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.port = port
        self.address = ""
        self._stopping = False
        self._errors: list[str] = []
        self._process: QtCore.QProcess | None = None

    @property
    def running(self) -> bool:
        return self._process is not None

    def start(self) -> None:
        if self._process is not None:
            return
        process = QtCore.QProcess(self)
        process.setProgram(sys.executable)
        process.setArguments(["-m", "localrag", "serve", "--port", str(self.port)])
        process.readyReadStandardOutput.connect(self._read_output)
        process.readyReadStandardError.connect(self._read_errors)
        process.finished.connect(self._finished)
        process.errorOccurred.connect(self._error)
        self._stopping = False
        self._errors = []
        self._process = process
        process.start()

    def stop(self) -> None:
        """Ask the server to end and wait for it (a few seconds at most; then it is killed)."""
        process = self._process
        if process is None:
            return
        self._stopping = True
        process.terminate()
        if not process.waitForFinished(STOP_WAIT_MS):
            log.warning("the API server did not end in %d ms; killing it", STOP_WAIT_MS)
            process.kill()
            process.waitForFinished(STOP_WAIT_MS)

    def _read_output(self) -> None:
        if self._process is None:
            return
        text = bytes(self._process.readAllStandardOutput().data()).decode("utf-8", "replace")
        found = _ADDRESS.search(text)
        if found and not self.address:
            self.address = found.group(1)
            log.info("API server listening at %s", self.address)
            self.started.emit(self.address)

    def _read_errors(self) -> None:
        if self._process is None:
            return
        text = bytes(self._process.readAllStandardError().data()).decode("utf-8", "replace")
        self._errors += [line.strip() for line in text.splitlines() if line.strip()]
        self._errors = self._errors[-20:]

    def _error(self, error: QtCore.QProcess.ProcessError) -> None:
        if error == QtCore.QProcess.ProcessError.FailedToStart:
            self._errors.append(f"the API server could not be started ({sys.executable})")
            self._finished()

    def _finished(self, *_: object) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        self._read_errors()
        process.deleteLater()
        self.address = ""
        reason = ""
        if not self._stopping:
            reason = next(
                (line.removeprefix("local-rag: ") for line in reversed(self._errors) if "local-rag:" in line),
                self._errors[-1] if self._errors else "the API server ended",
            )
            log.warning("API server ended: %s", reason)
        self.stopped.emit(reason)
