"""The transcript and the ask state machine are plain functions over plain data: they run without Qt (in a
process that never loads it)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import sys
from localrag.core.answer.citations import Source
from localrag.core.answer.history import Message
from localrag.gui.views.transcript import turn_html, turns_from_messages

source = Source(1, 4, "Lighthouse manual", "/docs/lighthouse.md", "markdown", 2, "Lamp", [7], cited=True)
messages = [
    Message(1, 1, "user", "When is the lamp lit?", grounded=True),
    Message(2, 1, "assistant", "Thirty minutes before sunset [1].", grounded=True, sources=[source],
            timings={"notice": "", "cancelled": True}),
]
(turn,) = turns_from_messages(messages)
assert turn.question == "When is the lamp lit?" and turn.message_id == 2 and turn.stopped
assert turn.sources[0].number == 1 and turn.sources[0].page_number == 2 and turn.sources[0].chunk_ids == [7]
colors = dict(muted="#666", warning="#b45309", error="#c53030", you_bg="#eef", quote_bg="#ffe",
              quote_bar="#eb3", text="#000")
html = turn_html(0, turn, colors)
assert "When is the lamp lit?" in html and "href='cite:0:1'" in html.replace('"', "'"), html
assert "Lighthouse manual" in html
assert "PySide6" not in sys.modules, "the transcript imported Qt"
print("ok")
"""


def test_the_transcript_renders_stored_messages_without_qt():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


STATE_MACHINE = r"""
import sys
from localrag.core.answer.citations import CitationCheck, Source
from localrag.core.answer.events import Done, Retrieved
from localrag.core.retrieve.results import RetrievalResponse
from localrag.gui.views import turns
from localrag.gui.views.transcript import turn_html

source = Source(1, 4, "Lighthouse manual", "/docs/lighthouse.md", "markdown", 2, "Lamp", [7])
turn = turns.asked("When is the lamp lit?", grounded=True, strict=False)
assert turn.pending and turn.status == turns.SEARCHING
assert turns.waiting(turn) and turn.status == turns.WAITING
assert turns.retrieved(turn, Retrieved("lamp", RetrievalResponse(), None, sources=[source]))
assert turn.status == "Answering from 1 source…" and turn.sources[0].number == 1
# A plain answer (no quoted evidence) streams: the first token renders the turn, the next ones are appended.
assert turns.token(turn, "At sunset", streaming=False) is turns.TokenShown.RENDER
assert turns.token(turn, " [1].", streaming=True) is turns.TokenShown.APPEND
assert turn.answer == "At sunset [1]."
done = Done(3, 9, "Thirty minutes before sunset [1].", CitationCheck(1), [source], [7], {}, cancelled=True)
turns.done(turn, done)
turns.finished(turn)
assert not turn.pending and turn.status == "" and turn.stopped and turn.message_id == 9
colors = dict(muted="#666", warning="#b45309", error="#c53030", you_bg="#eef", quote_bg="#ffe",
              quote_bar="#eb3", text="#000")
assert "Thirty minutes before sunset" in turn_html(0, turn, colors)
stopped = turns.asked("Hello?", grounded=False, strict=False)
assert stopped.status == turns.THINKING
turns.stopping(stopped)
turns.finished(stopped, error="Another answer is still running.")
assert stopped.stopped and stopped.error and not stopped.pending
assert "PySide6" not in sys.modules, "the ask state machine imported Qt"
print("ok")
"""


def test_the_ask_state_machine_runs_without_qt():
    done = subprocess.run([sys.executable, "-c", STATE_MACHINE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
