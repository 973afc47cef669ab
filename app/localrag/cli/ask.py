"""``local-rag ask QUESTION [--no-documents] [--strict] [--doc-type T] [--collection NAME]
[--chat ID | --save] [--json]``.

Prints the answer quoted from the sources at once, then streams what the model adds (each sentence checked),
then the sources. When the documents do not seem to answer, it says so and lists the closest passages
(exit status 0), with the command that asks the model alone; ``--no-documents`` (or ``--no-grounding``)
does, and its answer is printed under "From the model alone, not your documents:".

``--json`` prints one object instead: ``answer`` (what the person sees), ``evidence`` (the quoted
sentences: ``text``, ``number``, ``path``, ``page_number``, ``char_start``, ``char_end``, ``score``),
``generated`` (the model's sentences, each with ``supported``), ``basis`` (``documents``, ``not_found`` or
``model``) and ``not_found``, ``sources`` (``path``, ``page_number``, ``chunk_ids``, ``cited``…),
``citations``, ``notice`` and ``timings`` in seconds (``retrieval_s``,
``evidence_at_s``, ``ttft_s``, ``tokens_per_s``…). Nothing is kept unless ``--save`` (a new chat) or ``--chat
ID`` (continue that chat: its earlier questions make follow-ups work).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
from typing import Any

from localrag.core.errors import KnownError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="ask a question; the answer streams, then its sources")
    p.add_argument("question", help="the question")
    p.add_argument(
        "--no-documents",
        "--no-grounding",
        dest="grounded",
        action="store_false",
        help="ask the model alone: do not search the documents",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="answer only from the documents; say so when nothing relevant is found",
    )
    p.add_argument(
        "--doc-type",
        action="append",
        dest="doc_types",
        metavar="T",
        help="only documents of this type (pdf, markdown, text, html, docx, image); repeatable",
    )
    p.add_argument(
        "--collection",
        metavar="NAME",
        help="only this collection's documents (kept with a --chat; default: the chat's, else all)",
    )
    keep = p.add_mutually_exclusive_group()
    keep.add_argument(
        "--chat", type=int, metavar="ID", help="continue chat ID (and keep this exchange in it)"
    )
    keep.add_argument("--save", action="store_true", help="keep the exchange in a new chat")
    p.add_argument("--max-tokens", type=int, default=None, help="the answer's length limit")
    p.add_argument(
        "--lead",
        choices=("auto", "sources", "model"),
        default=None,
        help="what leads the answer: the quoted sources, the model's checked answer, or by model size",
    )
    p.add_argument(
        "--no-reword",
        dest="reword",
        action="store_false",
        default=None,
        help="when the sources lead, do not let the model reword them",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from localrag.core.answer.answer_json import AnswerJson
    from localrag.core.answer.engine import (
        MODEL,
        MODEL_ALONE_LABEL,
        NOT_ANSWERED,
        ChatEngine,
        Checked,
        Done,
        EvidenceReady,
        Failed,
        Searching,
        Token,
        WarmingUp,
    )
    from localrag.core.library import Library
    from localrag.core.llm.llm import LLMProvider

    started = time.monotonic()
    library = Library(owner=False)
    if args.lead:
        library.settings.answer_lead = args.lead
    if args.reword is not None:
        library.settings.reword = args.reword
    provider = LLMProvider(library.settings)
    # The model loads on a thread of this command's own while the store opens and retrieval runs.
    loading = threading.Thread(target=_load_quietly, args=(provider,), name="llm-load", daemon=True)
    loading.start()
    try:
        library.open()
    except KnownError as exc:  # the answer goes on, ungrounded, and says why
        if not args.json:
            print(f"local-rag: {exc.message}", file=sys.stderr)
    engine = ChatEngine(library, provider)
    record = AnswerJson(args.question, grounded=args.grounded, strict=args.strict, started=started)
    streamed = False
    lead = ""
    try:
        collection = _collection(library, args) if args.grounded and library.conninfo else None
        for event in engine.ask(
            args.chat,
            args.question,
            grounded=args.grounded,
            strict=args.strict,
            doc_types=args.doc_types,
            max_tokens=args.max_tokens,
            persist=bool(args.chat or args.save),
            collection_id=collection,
        ):
            record.add(event)
            if args.json:
                continue
            if isinstance(event, EvidenceReady):
                lead = event.lead
                print(event.text, flush=True)
                if lead != MODEL:
                    streamed = False
            elif isinstance(event, Token):
                if lead == MODEL or not record.out.get("sources"):
                    if not streamed and not lead and not args.strict:  # the model alone: said first
                        print(MODEL_ALONE_LABEL, flush=True)
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
                    streamed = True
            elif isinstance(event, Checked):
                if lead != MODEL and event.shown:
                    print(f"  {event.sentence.shown()}", flush=True)
            elif isinstance(event, Searching | WarmingUp):
                label = "Searching your documents…" if isinstance(event, Searching) else "Warming up…"
                print(label, file=sys.stderr, flush=True)
            elif isinstance(event, Done):
                if streamed:
                    print()
                _print_sources(event)
                if event.basis == NOT_ANSWERED and not args.strict:
                    command = f"local-rag ask --no-documents {_quoted(args.question)}"
                    print(f"\nTo ask the model without your documents: {command}")
            elif isinstance(event, Failed):
                print(f"local-rag: {event.message}", file=sys.stderr)
                _print_retrieved(record.out.get("sources", []))
    finally:
        loading.join()
        library.close()
    out = record.finish(provider)
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=2))
    return 1 if record.failed else 0


def _collection(library: Any, args: argparse.Namespace) -> int | None:
    """The collection asked for by name (a chat continued is scoped to it from now on), else the one the chat
    continued is scoped to, else none."""
    from localrag.core.answer import history

    collection = int(library.collection(args.collection).id) if args.collection else None
    if args.chat:
        with library.connect() as conn:
            if collection is not None:
                history.set_chat_collection(conn, args.chat, collection)
            chat = history.get_chat(conn, args.chat)
        return chat.collection_id if chat is not None else None
    return collection


def _load_quietly(provider: Any) -> None:
    """Load the model; a failure is kept in ``provider.state`` and reported by the engine's answer."""
    from localrag.core.errors import ModelMissing

    with contextlib.suppress(ModelMissing):
        provider.load()


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
