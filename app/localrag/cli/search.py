"""``local-rag search QUERY [--k N] [--mode M] [--doc-type T] [--path GLOB] [--collection NAME] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from localrag.core.answer.citations import page_phrase
from localrag.core.errors import KnownError
from localrag.core.retrieve import ERROR, MODES, RetrievalResponse, retrieve

SNIPPET_CHARS = 300


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="search the library (hybrid, vector or keyword) and print the passages")
    p.add_argument("query", help="what to look for")
    p.add_argument("--k", type=int, default=None, help="how many passages (default: the k setting, 8)")
    p.add_argument("--mode", choices=MODES, default=None, help="retrieval mode (default: the mode setting)")
    p.add_argument(
        "--doc-type",
        action="append",
        dest="doc_types",
        metavar="T",
        help="only documents of this type (pdf, markdown, text, html, docx, image); repeatable",
    )
    p.add_argument("--path", dest="path_glob", metavar="GLOB", help="only documents whose path matches")
    p.add_argument("--collection", metavar="NAME", help="only the documents of this collection")
    p.add_argument(
        "--route",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="search the documents the question names first (default: the routing setting, on)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from localrag.core.library import Library
    from localrag.host import Host

    library = Library(owner=False)
    try:
        library.open()
    except KnownError as exc:  # said in the JSON too, with the exit status
        resp = RetrievalResponse(mode=args.mode or "", query=args.query, reason=ERROR, error=exc.message)
    else:
        try:
            collection = library.collection(args.collection).id if args.collection else None
            with Host(library):
                resp = retrieve(
                    library,
                    args.query,
                    k=args.k,
                    mode=args.mode,
                    doc_types=args.doc_types,
                    path_glob=args.path_glob,
                    collection=collection,
                    route=args.route,
                )
        finally:
            library.close()
    if args.json:
        print(json.dumps(resp.to_dict(), ensure_ascii=False, indent=2))
    else:
        print_results(resp)
    if resp.reason:
        print(f"local-rag: {resp.error or resp.reason}", file=sys.stderr)
        return 1
    return 0


def print_results(resp: RetrievalResponse) -> None:
    if not resp.results and not resp.reason:
        print("No matching passages.")
    for i, r in enumerate(resp.results, 1):
        where = r.file_name + (", " + page_phrase(r.page_number, r.page_label) if r.doc_type == "pdf" else "")
        if r.heading_path:
            where += f" — {r.heading_path}"
        s = r.scores
        parts = [f"fused {s['fused']:.4f}"]
        if s.get("vector") is not None:
            rank = f" #{s['vector_rank']}" if s.get("vector_rank") else ""
            parts.append(f"vector {s['vector']:.3f}{rank}")
        if s.get("bm25") is not None:
            parts.append(f"bm25 {s['bm25']:.2f} #{s['bm25_rank']}")
        print(f"{i}. {where}")
        print(f"   {' · '.join(parts)} · chunks {','.join(map(str, r.chunk_ids))}")
        snippet = " ".join(r.text.split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + "…"
        print(textwrap.indent(textwrap.fill(snippet, 100), "   "))
    if resp.routing.get("doc_ids"):
        print(f"(routing: {resp.routing['mode']}; {resp.routing['reason']})", file=sys.stderr)
    for pin in resp.routing.get("pages_first") or ():
        print(
            f"(pack {pin['pack']}: page {pin['page']} first, {pin['why']}; the document: {pin['evidence']})",
            file=sys.stderr,
        )
    if resp.timings:  # none when the store could not be searched: the error alone is said
        timings = " ".join(f"{k} {v:.1f}" for k, v in resp.timings.items())
        print(f"({resp.mode}; ms: {timings})", file=sys.stderr)
