"""The Qt binding itself: a long-running window emits millions of signals."""

from __future__ import annotations

import sys


def test_emitting_signals_does_not_leak_references_to_true():
    """PySide6 6.12.0 returns True from emit() without a reference: after a few thousand emits (one long
    streamed answer) Python aborts with "bool_dealloc". The installed binding must not have that bug."""
    from localrag.gui.qt import QObject, Signal

    class Source(QObject):
        ping = Signal(str)

    src = Source()
    src.ping.connect(lambda _text: None)
    before = sys.getrefcount(True)
    for _ in range(50):  # few enough that a leaking binding fails here instead of aborting
        src.ping.emit("token")
    assert abs(sys.getrefcount(True) - before) < 10, (
        "this PySide6 version corrupts refcounts; see pyproject.toml"
    )
