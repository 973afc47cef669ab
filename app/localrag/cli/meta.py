"""``local-rag meta [DOC] [--set FIELD=VALUE ...] [--json]``: what each document is (organisation, kind,
period), as found at ingest or set by hand.

Without ``DOC`` every ready document is listed. ``DOC`` is a document id or a file name. ``--set`` changes a
field (``--set organization="Acme Corp"``; an empty value gives back what was found at ingest): the
document's chunk contexts and BM25 postings follow at once, and ``local-rag reembed`` embeds its changed
chunks again.
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
                stale = metadata.edit(conn, int(rows[0][0]), edits)
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
        m = d["meta"]
        parts = [f"{k}: {m[k]}" for k in ("organization", "kind", "period", "date", "ticker") if m.get(k)]
        print(f"{d['id']:>5}  {d['file_name']}")
        print(f"       {' · '.join(parts) or '(nothing found)'}")
    return 0
