"""``local-rag ask`` in the terminal: the engine's events printed as they come (``Printer``, the command
line's ``EventSink``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from localrag.core.answer.delivery import EventSink
from localrag.core.answer.events import (
    MODEL,
    MODEL_ALONE_LABEL,
    NOT_ANSWERED,
    Checked,
    Done,
    EvidenceReady,
    Failed,
    Searching,
    Token,
    WarmingUp,
)


class Printer(EventSink[None]):
    """The engine's events printed as they come: the quoted answer, the model's words or checked sentences,
    then the sources; progress and errors on stderr."""

    def __init__(self, args: argparse.Namespace, record: Any) -> None:
        self.args = args
        self.record = record  # the JSON object collected so far: the sources found
        self.streamed = False
        self.lead = ""

    def on_searching(self, event: Searching) -> None:
        print("Searching your documents…", file=sys.stderr, flush=True)

    def on_warming_up(self, event: WarmingUp) -> None:
        print("Warming up…", file=sys.stderr, flush=True)

    def on_evidence(self, event: EvidenceReady) -> None:
        self.lead = event.lead
        print(event.text, flush=True)
        if self.lead != MODEL:
            self.streamed = False

    def on_token(self, event: Token) -> None:
        if self.lead == MODEL or not self.record.out.get("sources"):
            if not self.streamed and not self.lead and not self.args.strict:  # the model alone: said first
                print(MODEL_ALONE_LABEL, flush=True)
            sys.stdout.write(event.text)
            sys.stdout.flush()
            self.streamed = True

    def on_checked(self, event: Checked) -> None:
        if self.lead != MODEL and event.shown:
            print(f"  {event.sentence.shown()}", flush=True)

    def on_done(self, event: Done) -> None:
        if self.streamed:
            print()
        _print_sources(event)
        if event.basis == NOT_ANSWERED and not self.args.strict:
            command = f"local-rag ask --no-documents {_quoted(self.args.question)}"
            print(f"\nTo ask the model without your documents: {command}")

    def on_failed(self, event: Failed) -> None:
        print(f"local-rag: {event.message}", file=sys.stderr)
        _print_retrieved(self.record.out.get("sources", []))


def _print_sources(event: Any) -> None:
    if event.notice:
        print(f"\nNote: {event.notice}")
    if event.citations.invalid:
        numbers = ", ".join(f"[{n}]" for n in event.citations.invalid)
        print(f"(not a source: {numbers})")
    if event.sources:
        if event.basis == "not_found":
            print("\nThe closest passages:")
        else:
            print("\nSources:" if event.citations.cited else "\nSources (not cited by the answer):")
        for s in event.sources:
            mark = (
                "  (quoted, not cited)"
                if s.quoted
                else ("" if s.cited or not event.citations.cited else "  (not cited)")
            )
            score = f" · score {s.score:.2f}" if s.score is not None else ""
            print(f"[{s.number}] {s.where()}{score}{mark}")
            print(f"    {s.path}")
    t = event.timings
    parts = []
    if "retrieval_s" in t:
        parts.append(f"retrieval {t['retrieval_s']:.2f} s")
    if "ttft_s" in t:
        parts.append(f"first token {t['ttft_s']:.2f} s")
    if t.get("tokens_per_s"):
        parts.append(f"{t['tokens_per_s']:.0f} tokens/s")
    if event.chat_id is not None:
        parts.append(f"chat {event.chat_id}")
    if parts:
        print("(" + " · ".join(parts) + ")", file=sys.stderr)


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _print_retrieved(sources: list[dict[str, Any]]) -> None:
    from localrag.core.answer.citations import Source

    for s in sources:
        source = Source.from_dict(s)
        print(f"[{source.number}] {source.where()}\n    {source.path}")
