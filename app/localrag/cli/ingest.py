"""``local-rag ingest PATH... [--json]``, ``local-rag remove DOC...``, ``local-rag reembed`` and
``local-rag watch add|remove|list|scan``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from localrag.core.ingest.pipeline import IngestEvent, Ingestor, IngestSummary
from localrag.core.library import Library
from localrag.host import Host


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="index files and folders (resumes unfinished work first)")
    p.add_argument(
        "paths", nargs="*", type=Path, help="files or folders; none: only resume unfinished documents"
    )
    p.add_argument("--json", action="store_true", help="print one JSON summary instead of progress")
    p.set_defaults(func=run)
    d = sub.add_parser("remove", help="remove documents from the library (their files are left alone)")
    d.add_argument("docs", nargs="+", metavar="DOC", help="a document id, its file's path or its file name")
    d.set_defaults(func=run_remove)
    r = sub.add_parser(
        "reembed",
        help="bring the library up to date: read again the documents an improved reader reads differently, "
        "and embed every chunk that lacks a vector from the active embedding model",
    )
    r.set_defaults(func=run_reembed)
    w = sub.add_parser("watch", help="folders whose new, changed and deleted files are picked up")
    w_actions = w.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in (("add", "watch a folder"), ("remove", "stop watching a folder")):
        a = w_actions.add_parser(name, help=text)
        a.add_argument("folder", type=Path)
    w_actions.add_parser("list", help="list watched folders")
    w_actions.add_parser("scan", help="index what changed in watched folders now")
    w.set_defaults(func=run_watch)


class _ProgressLine:
    """One status line on stderr, redrawn at most 10 times a second."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.quiet = not enabled
        self._last = 0.0

    def __call__(self, e: IngestEvent) -> None:
        if self.quiet:
            return
        final = e.status in ("ready", "failed", "cancelled", "skipped", "removed")
        now = time.monotonic()
        if not final and (not self.enabled or now - self._last < 0.1):
            return
        self._last = now
        if e.status == "extracting":
            line = f"reading  {e.title}: page {e.pages_done}/{e.pages or '?'}"
        elif e.status == "embedding":
            bar = _bar(e.chunks_embedded, e.chunks_total)
            eta = f" ETA {e.eta_s:,.0f}s" if e.eta_s is not None else ""
            line = f"indexing {e.title}: {bar} {e.chunks_embedded}/{e.chunks_total} chunks{eta}"
        elif e.status == "queued" or (e.status == "removed" and not (e.path or e.title)):
            return  # a document read again is first removed by its id: the line that says it is ready follows
        else:
            word = {"ready": "ok", "failed": "FAILED", "cancelled": "cancelled", "skipped": "skipped"}.get(
                e.status, e.status
            )
            detail = (
                f" ({e.pages} pages, {e.chunks_total} chunks)"
                if e.status == "ready"
                else (f": {e.message}" if e.message else "")
            )
            line = f"{word:9} {e.path or e.title}{detail}"
        if self.enabled:
            end = "\n" if final else ""
            sys.stderr.write("\r\033[K" + line[:200] + end)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _bar(done: int, total: int, width: int = 24) -> str:
    filled = int(width * done / total) if total else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


def run(args: argparse.Namespace) -> int:
    progress = _ProgressLine(enabled=not args.json)
    library = Library(owner=False)
    library.open()
    ingestor = Ingestor(library, on_event=progress)
    try:
        # The embedding threads stop before the store closes (a model still loading needs it).
        with Host(library, embedding=True):
            return _ingest(args, ingestor)
    finally:
        library.close()


def _ingest(args: argparse.Namespace, ingestor: Ingestor) -> int:
    try:
        queued = ingestor.enqueue(args.paths)
        try:
            summary = ingestor.run()
        except KeyboardInterrupt:
            # Ctrl+C or `kill`: like closing the window, nothing is cancelled. Every transaction is whole, so
            # the documents keep their committed chunks and vectors and the next run carries on from there.
            print(
                "\nlocal-rag: interrupted; what was committed is kept, and `local-rag ingest` (or the "
                "window) finishes the rest",
                file=sys.stderr,
            )
            return 130
        summary.skipped = sum(1 for e in queued if e.status == "skipped")
        early_failures = [e for e in queued if e.status == "failed"]
        summary.failed += len(early_failures)
        summary.events = early_failures + [e for e in queued if e.status == "skipped"] + summary.events
    finally:
        ingestor.close()
    _print_summary(summary, args.json)
    return 1 if summary.failed else 0


def _print_summary(summary: IngestSummary, as_json: bool) -> None:
    if as_json:
        out = asdict(summary)
        out["files"] = out.pop("events")
        print(json.dumps(out, indent=2, default=str))
        return
    print(
        f"{summary.ready} indexed, {summary.skipped} skipped, {summary.failed} failed, {summary.cancelled} "
        f"cancelled — {summary.pages} pages, {summary.chunks} chunks in {summary.seconds:.1f}s"
    )
    for e in summary.events:
        if e.status == "failed":
            print(f"  failed: {e.path}: {e.message}")


def run_watch(args: argparse.Namespace) -> int:
    from localrag.core.ingest import watch

    library = Library(owner=False)
    library.open()
    try:
        with library.connect() as conn:
            if args.action == "add":
                watch.add_watched_folder(conn, args.folder)
                print(
                    f"watching {args.folder.absolute()} (run `local-rag watch scan`, or keep the window open)"
                )
            elif args.action == "remove":
                watch.remove_watched_folder(conn, args.folder)
            elif args.action == "list":
                for folder in watch.list_watched_folders(conn):
                    print(folder)
            else:
                paths, removed = watch.scan_watched(conn)
                with Ingestor(library, on_event=_ProgressLine(enabled=True)) as ingestor:
                    ingestor.enqueue(paths)
                    summary = ingestor.run()
                print(
                    f"{len(paths)} new or changed, {len(removed)} removed; {summary.ready} indexed, "
                    f"{summary.failed} failed"
                )
    finally:
        library.close()
    return 0


def run_remove(args: argparse.Namespace) -> int:
    """Each DOC names one document: an id, a path, or a file name that only one document has. Nothing is
    removed unless every DOC names exactly one."""
    from localrag.core.ingest import documents, watch

    library = Library(owner=False)
    library.open()
    try:
        with library.connect() as conn:
            rows = conn.execute("SELECT id, path FROM documents ORDER BY id").fetchall()
            conn.commit()
            chosen: dict[int, str] = {}
            for doc in args.docs:
                matches = _named(doc, rows)
                if len(matches) != 1:
                    found = "".join(f"\n  {i}  {p}" for i, p in matches)
                    reason = (
                        f"several documents are {doc}; name one by its id:{found}"
                        if matches
                        else (f"no document is {doc} (`local-rag meta` lists the ready ones with their ids)")
                    )
                    print(f"local-rag: {reason}", file=sys.stderr)
                    return 1
                chosen.update(matches)
            watched = watch.list_watched_folders(conn)
            for doc_id, path in chosen.items():
                if not documents.remove_document(conn, doc_id):
                    continue  # removed meanwhile by someone else
                print(f"removed   {doc_id}  {path}")
                if any(Path(path).is_relative_to(folder) for folder in watched) and Path(path).exists():
                    print("          its folder is watched: the next scan indexes the file again")
    finally:
        library.close()
    return 0


def _named(doc: str, rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The documents ``doc`` names: the one with that id, else those with that path, else those whose file
    has that name."""
    if doc.isdigit():
        return [(i, p) for i, p in rows if i == int(doc)]
    absolute = str(Path(doc).absolute())
    by_path = [(i, p) for i, p in rows if p == absolute]
    return by_path or [(i, p) for i, p in rows if Path(p).name == doc]


def run_reembed(args: argparse.Namespace) -> int:
    library = Library(owner=False)
    library.open()
    ingestor = Ingestor(library, on_event=_ProgressLine(enabled=True))
    try:
        with Host(library, embedding=True):
            summary = ingestor.reembed()
    finally:
        ingestor.close()
        library.close()
    again = f"read {summary.read_again} document(s) again, " if summary.read_again else ""
    print(
        f"{again}re-embedded {summary.ready} document(s), {summary.embedded_chunks} chunks and "
        f"{summary.embedded_pieces} pieces in {summary.seconds:.1f}s"
    )
    return 0
