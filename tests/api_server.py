"""``local-rag serve`` as a real child process, for the API tests; not a test module."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

START_WITHIN_S = 120.0
_URL = re.compile(r"Local RAG API on (http://127\.0\.0\.1:\d+)/v1")


class ApiServer:
    """A running ``python -m localrag serve --port 0 [args]`` on the test data folder: its ``url`` (``http://
    127.0.0.1:PORT``), ``token`` and a ``client`` that sends the token."""

    def __init__(self, home: Path, log_dir: Path, *args: str, **env: str) -> None:
        self.home = home
        self.stderr_path = log_dir / "serve-stderr.txt"
        self._stderr = open(self.stderr_path, "w+")  # noqa: SIM115 (read when the process ends)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "localrag", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, **env},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        threading.Thread(target=lambda: [self.lines.put(line) for line in stdout], daemon=True).start()
        self.url = self._wait_for_url()
        self.token = (home / "api.token").read_text().strip()
        self.client = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=120
        )

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + START_WITHIN_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            found = _URL.search(line)
            if found:
                return found.group(1)
        self.stop()
        raise AssertionError(f"the server did not start:\n{self.stderr()[-3000:]}")

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text()

    def wait_for_model(self, timeout: float = 120.0) -> dict[str, Any]:
        """The status once the language model is no longer loading."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.client.get("/v1/status").json()
            if state["model"]["status"] not in ("idle", "loading") or time.monotonic() > deadline:
                return state
            time.sleep(0.1)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60.0) -> int:
        """Send ``sig`` (Ctrl+C) and return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if hasattr(self, "client"):
            self.client.close()
        self._stderr.close()
        return self.proc.returncode


def sse_messages(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """``(event, data)`` for each server-sent message (``event`` "" when unnamed; JSON data parsed)."""
    event, data = "", []
    for line in lines:
        if line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
        elif not line and data:
            text = "\n".join(data)
            yield event, (text if text == "[DONE]" else json.loads(text))
            event, data = "", []
