"""``local-rag ask QUESTION [--no-documents] [--strict] [--doc-type T] [--collection NAME]
[--chat ID | --save] [--json]``.

Prints the answer quoted from the sources at once, then streams what the model adds (each sentence checked),
then the sources. When the documents do not seem to answer, it says so and lists the closest passages
(exit status 0), with the command that asks the model alone; ``--no-documents`` (or ``--no-grounding``)
does, and its answer is printed under "From the model alone, not your documents:".

``--json`` prints one object instead: ``answer`` (what the person sees), ``evidence`` (the quoted
sentences: ``text``, ``number``, ``path``, ``page_number``, ``char_start``, ``char_end``, ``score``),
``generated`` (the model's sentences, each with ``supported``), ``figures`` (the computation the question
asks for, or null: ``status`` computed/missing/ambiguous, ``formula``, ``result``, ``result_text``, ``unit``,
``operands`` each with ``label``, ``heading``, ``value``, ``number``, ``page_number``, ``marks``, and the
``candidates`` of a missing one), ``basis`` (``documents``, ``not_found`` or
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
    from localrag.cli.ask_output import Printer
    from localrag.core.answer.answer_json import AnswerJson
    from localrag.core.answer.delivery import deliver
    from localrag.core.answer.engine import ChatEngine
    from localrag.core.answer.request import AskRequest
    from localrag.core.library import Library
    from localrag.core.llm.provider import LLMProvider
    from localrag.host import Host

    started = time.monotonic()
    library = Library(owner=False)
    if args.lead:
        library.settings.answer_lead = args.lead
    if args.reword is not None:
        library.settings.reword = args.reword
    provider = LLMProvider(library.settings)
    # The model loads on a thread of this command's host while the store opens and retrieval runs.
    host = Host(library).start()
    host.start_task("llm-load", lambda: _load_quietly(provider))
    try:
        library.open()
    except KnownError as exc:  # the answer goes on, ungrounded, and says why
        if not args.json:
            print(f"local-rag: {exc.message}", file=sys.stderr)
    engine = ChatEngine(library, provider)
    record = AnswerJson(args.question, grounded=args.grounded, strict=args.strict, started=started)
    printer = Printer(args, record)
    try:
        collection = _collection(library, args) if args.grounded and library.conninfo else None
        request = AskRequest(
            args.question,
            chat_id=args.chat,
            grounded=args.grounded,
            strict=args.strict,
            doc_types=args.doc_types,
            max_tokens=args.max_tokens,
            persist=bool(args.chat or args.save),
            collection_id=collection,
        )
        for event in engine.ask(request):
            record.add(event)
            if not args.json:
                deliver(event, printer)
    finally:
        host.close()
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
