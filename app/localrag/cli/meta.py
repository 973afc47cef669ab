"""``local-rag meta [DOC] [--set FIELD=VALUE ...] [--domain PACK] [--json]``: what each document is
(organisation, kind, period, and the domain pack that acts on it), as found at ingest or set by hand.

Without ``DOC`` every ready document is listed. ``DOC`` is a document id or a file name. ``--set`` changes a
field (``--set organization="Acme Corp"``; an empty value gives back what was found at ingest): the
document's chunk contexts and BM25 postings follow at once, and ``local-rag reembed`` embeds its changed
chunks again. ``--domain finance`` turns a pack on for the document (``--domain none``: no pack acts on it;
``--domain ""``: back to what was found at ingest). Each field is shown with where it was found.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("meta", help="show or set what documents are (organisation, kind, period)")
    p.add_argument("doc", nargs="?", help="a document id or file name (default: every ready document)")
    p.add_argument("--set", action="append", dest="sets", default=[], metavar="FIELD=VALUE")
    p.add_argument(
        "--domain",
        metavar="PACK",
        help="turn a domain pack on for DOC (e.g. finance; none: no pack; empty: as found at ingest)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from localrag.core.ingest import metadata
    from localrag.core.library import Library

    edits: dict[str, Any] = {}
    for item in args.sets:
        field, sep, value = item.partition("=")
        if not sep or field not in metadata.EDITABLE:
            print(
                f"local-rag: --set takes FIELD=VALUE, FIELD one of {', '.join(metadata.EDITABLE)}",
                file=sys.stderr,
            )
            return 2
        edits[field] = value
    if args.domain is not None:
        edits["domain"] = args.domain
    library = Library(owner=False)
    library.open()
    try:
        with library.pool.connection() as conn:
            rows = conn.execute(
                "SELECT id, path, title, meta FROM documents WHERE status = 'ready' ORDER BY id"
            ).fetchall()
            if args.doc:
                rows = [r for r in rows if args.doc in (str(r[0]), Path(str(r[1])).name)]
                if not rows:
                    print(f"local-rag: no ready document {args.doc}", file=sys.stderr)
                    return 1
            if edits:
                if len(rows) != 1:
                    print("local-rag: --set needs one document", file=sys.stderr)
                    return 2
                try:
                    stale = metadata.edit(conn, int(rows[0][0]), edits)
                except ValueError as exc:
                    print(f"local-rag: {exc}", file=sys.stderr)
                    return 2
                conn.commit()
                if stale:
                    print(
                        "changed; run `local-rag reembed` to embed its chunks with the new context",
                        file=sys.stderr,
                    )
                rows = conn.execute(
                    "SELECT id, path, title, meta FROM documents WHERE id = %s", (rows[0][0],)
                ).fetchall()
    finally:
        library.close()
    docs = [{"id": r[0], "file_name": Path(str(r[1])).name, "title": r[2], "meta": r[3]} for r in rows]
    if args.json:
        print(json.dumps(docs, indent=2, ensure_ascii=False))
        return 0
    for d in docs:
        m = d["meta"] or {}
        sources = m.get("sources") or {}
        keys = ("organization", "kind", "period", "date", "ticker", "author")
        parts = [f"{k}: {m[k]} ({sources.get(k, '?')})" for k in keys if m.get(k)]
        print(f"{d['id']:>5}  {d['file_name']}")
        print(f"       {' · '.join(parts) or '(nothing found)'}")
        if m.get("domain"):
            print(f"       domain pack: {m['domain']} ({sources.get('domain', '?')})")
    return 0
