"""Every command writes ``logs/localrag.log`` in the data folder, the file its messages point to: rotated, its
files 0600 and ``logs/`` 0700 whoever runs the app. Real processes on the session's data folder and store."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from localrag.core import logs, paths

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture()
def root_handlers():
    """The test process's logging as it was, back after a test that sets it up as a command does."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in saved]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)


def test_a_command_writes_the_log_its_messages_name_private_to_the_user(library, home):
    log_file = paths.log_file()
    before = log_file.read_text(errors="replace") if log_file.exists() else ""
    env = {**os.environ, "LOCALRAG_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "localrag", "search", "how do I install it", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    written = log_file.read_text(errors="replace")[len(before) :]
    assert "localrag.cli.search" in written and " search" in written
    assert _mode(log_file) == 0o600 and _mode(log_file.parent) == 0o700
    for other in log_file.parent.iterdir():  # postgres.log too, though the server may run as its own account
        assert _mode(other) == 0o600, other
    assert _mode(home) & 0o066 == 0  # the data folder: never readable or writable by others


def test_a_bug_in_a_command_prints_one_line_and_its_traceback_is_in_the_log(
    library, monkeypatch, capsys, root_handlers
):
    from localrag.cli import run_cli, search

    def broken(args):  # a fake: injects a bug into the command
        raise LookupError("injected fault 7f3a")

    monkeypatch.setattr(search, "run", broken)
    assert run_cli(["search", "anything"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("local-rag: Internal error (LookupError: injected fault 7f3a)")
    assert str(paths.log_file()) in err[-1]
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = paths.log_file().read_text(errors="replace")
    assert "Traceback" in text[text.index("injected fault 7f3a") - 2000 :]


def test_the_log_rotates_and_every_file_stays_private(tmp_path, monkeypatch, root_handlers):
    monkeypatch.setenv("LOCALRAG_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(logs, "MAX_BYTES", 2000)
    old_umask = os.umask(0o022)
    try:
        logs.set_up_logging(terminal_level=None)
        logs.set_up_logging(terminal_level=None)  # again: the handlers are replaced, not doubled
        ours = [h for h in logging.getLogger().handlers if getattr(h, "_localrag", False)]
        assert len(ours) == 1
        for i in range(200):
            logging.getLogger("localrag.test").warning("line %d of a log that must rotate", i)
    finally:
        os.umask(old_umask)
    folder = tmp_path / "data" / "logs"
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["localrag.log", "localrag.log.1", "localrag.log.2", "localrag.log.3"]
    assert all(_mode(folder / name) == 0o600 for name in files) and _mode(folder) == 0o700
    assert _mode(tmp_path / "data") == 0o700
    assert "line 199" in (folder / "localrag.log").read_text()


def test_the_window_writes_the_log_too(tmp_path):
    """The window (``local-rag`` with no command), offscreen on a data folder of its own: it logs from its
    start, and once its store is open SIGTERM closes it the normal way."""
    import signal
    import time

    home = tmp_path / "home"
    env = {
        **os.environ,
        "LOCALRAG_HOME": str(home),
        "QT_QPA_PLATFORM": "offscreen",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "localrag"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    log_file = home / "logs" / "localrag.log"
    try:
        deadline = time.monotonic() + 240
        while not (log_file.exists() and "store open at" in log_file.read_text(errors="replace")):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the window wrote no log"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "the window opens" in log_file.read_text(errors="replace")
    assert _mode(log_file) == 0o600 and _mode(log_file.parent) == 0o700
