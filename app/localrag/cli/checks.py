"""``local-rag checks run|list|export|import|remove``: the test questions kept in the library (the window's
Test questions view shows the same ones).

- ``checks run [--id N ...] [--json]``: search and answer each question with the settings in force; for each,
  the rank of its page among the passages found and whether the answer quotes its page; the totals, and what
  changed since the previous run. The run is kept in the library's history.
- ``checks list [--runs] [--json]``: the questions with their outcome in the last run; ``--runs``: the
  history of runs.
- ``checks export FILE``: every question as JSONL, the format of the ``local-rag eval`` datasets (``-``:
  standard output).
- ``checks import FILE ...``: add questions from such files (the same question about the same file is
  updated); lines that name no page are skipped. A bad line stops the import before anything is added.
- ``checks remove ID ...``: delete questions.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from localrag.core.progress import print_progress


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("checks", help="test questions: run them, list, export and import them")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="run the test questions with the settings in force")
    run.add_argument("--id", type=int, action="append", dest="ids", help="only this question (repeatable)")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    listing = actions.add_parser("list", help="the test questions and their last outcome")
    listing.add_argument("--runs", action="store_true", help="the history of runs instead")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    export = actions.add_parser("export", help="write the test questions as JSONL")
    export.add_argument("file", help="the JSONL file to write (-: standard output)")
    imports = actions.add_parser("import", help="add test questions from JSONL files")
    imports.add_argument("files", nargs="+", type=Path, metavar="FILE")
    imports.add_argument("--json", action="store_true", help="print one JSON object")
    remove = actions.add_parser("remove", help="delete test questions")
    remove.add_argument("ids", nargs="+", type=int, metavar="ID")
    p.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    from localrag.core.checks import questions as cq

    loaded: list[cq.Question] = []
    skipped = 0
    if args.action == "import":  # read every file first: a bad line adds nothing
        for path in args.files:
            try:
                found = cq.read_jsonl(path)
            except (OSError, ValueError) as exc:
                print(f"local-rag: {exc}", file=sys.stderr)
                return 2
            loaded += [q for q in found if q.answerable]
            skipped += sum(1 for q in found if not q.answerable)
    from localrag.core.library import Library

    library = Library(owner=False)
    library.open()
    try:
        if args.action == "run":
            return _run(library, args)
        if args.action == "list":
            return _list(library, args)
        if args.action == "export":
            return _export(library, args.file)
        if args.action == "import":
            return _import(library, loaded, skipped, args.json)
        return _remove(library, args.ids)
    finally:
        library.close()


def _run(library: Any, args: argparse.Namespace) -> int:
    from localrag.core.checks import store
    from localrag.core.checks.results import what_changed
    from localrag.core.checks.run import run_checks

    with library.connect() as conn:
        before = store.runs(conn, limit=1)
        questions = {q.id: q for q in store.questions(conn)}
    if not questions:
        print("local-rag: no test questions yet (import a file, or save one from an answer)", file=sys.stderr)
        return 1
    run, results = run_checks(library, ids=args.ids, progress=None if args.json else print_progress)
    changed = what_changed(before[-1] if before else None, run)
    if args.json:
        rows = [
            {**questions[r.question_id].to_json(), "question_id": r.question_id, **_outcome(r)}
            for r in results
            if r.question_id in questions
        ]
        print(json.dumps({"run": run.to_json(), "changed": changed, "results": rows}, indent=2))
        return 0
    for r in results:
        q = questions[r.question_id]
        quoted = "quoted" if r.quoted_on_page else "  —   "
        print(f"{r.question_id:>5}  {_rank(r.rank)}  {quoted}  {q.question}")
        if r.error:
            print(f"       {r.error}")
    print(run.totals() + f" ({run.seconds:.1f} s)")
    if before:
        print("changed since the last run: " + ("; ".join(changed) or "nothing"))
    return 0


def _rank(rank: int | None) -> str:
    return f"rank {rank:>2}" if rank is not None else "not found"


def _outcome(r: Any) -> dict[str, Any]:
    return {
        "rank": r.rank,
        "quoted_on_page": r.quoted_on_page,
        "quoted": r.quoted,
        "found": r.found,
        "seconds": round(r.seconds, 3),
        "error": r.error,
    }


def _list(library: Any, args: argparse.Namespace) -> int:
    from localrag.core.checks import store
    from localrag.core.checks.results import what_changed

    with library.connect() as conn:
        if args.runs:
            runs = store.runs(conn)
        else:
            questions = store.questions(conn)
            last = store.last_results(conn)
    if args.runs:
        if args.json:
            print(json.dumps([r.to_json() for r in runs], indent=2))
            return 0
        for before, run in zip([None, *runs], runs, strict=False):
            changed = "; ".join(what_changed(before, run)) or ("first run" if before is None else "—")
            when = run.started_at.astimezone().strftime("%Y-%m-%d %H:%M")
            print(f"{run.id:>4}  {when}  {run.totals()}  ({changed})")
        return 0
    if args.json:
        rows = []
        for q in questions:
            r = last.get(q.id or 0)
            rows.append({**q.to_json(), "question_id": q.id, "last": _outcome(r) if r else None})
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for q in questions:
        r = last.get(q.id or 0)
        outcome = "not run"
        if r is not None:
            outcome = f"{_rank(r.rank)}, {'quoted' if r.quoted_on_page else 'not quoted'}"
        pages = ", ".join(map(str, q.pages))
        print(f"{q.id:>5}  {q.file} p. {pages}  [{outcome}]  {q.question}")
    return 0


def _export(library: Any, target: str) -> int:
    from localrag.core.checks import store
    from localrag.core.checks.questions import write_jsonl

    with library.connect() as conn:
        questions = store.questions(conn)
    if target == "-":
        for q in questions:
            print(json.dumps(q.to_json(), ensure_ascii=False))
        return 0
    n = write_jsonl(questions, Path(target))
    print(f"{n} test questions written to {target}", file=sys.stderr)
    return 0


def _import(library: Any, loaded: list[Any], skipped: int, as_json: bool) -> int:
    from localrag.core.checks import store

    with library.connect() as conn:
        added, updated = store.save_all(conn, loaded)
    if as_json:
        print(json.dumps({"added": added, "updated": updated, "skipped": skipped}))
    else:
        note = f"; {skipped} lines name no page and were skipped" if skipped else ""
        print(f"{added} test questions added, {updated} updated{note}", file=sys.stderr)
    return 0


def _remove(library: Any, ids: list[int]) -> int:
    from localrag.core.checks import store

    with library.connect() as conn:
        n = store.delete(conn, ids)
    print(f"{n} test questions removed", file=sys.stderr)
    return 0 if n == len(set(ids)) else 1
