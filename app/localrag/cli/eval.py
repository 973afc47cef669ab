"""``local-rag eval DATASET_DIR [--split test|train] [--mode M] [--json]``: retrieval quality on a BEIR
folder; on a page-hit folder (documents and questions with ``file`` and ``pages``, as financebench-dev), page
hit@1/5/10 pooled and scoped to the question's document, in this data folder's library (``--route``, ``--k``;
``--split tune|test`` asks one half of the folder's ``split.json``; questions with ``evidence`` also give
span@k, the answering sentence among the first k passages).

``local-rag eval answers DATASET_DIR [--answer-mode M] [--limit N] [--kind K] [--split tune|test] [--json]``:
answer quality — the real ``ask`` path over questions with gold answers and pages (see ``eval/answers.py``),
in this data folder's library (``LOCALRAG_HOME``; its documents are ingested once and kept). ``--split`` (or
``--half``) asks only the questions of that half of the dataset's ``split.json``; all its documents are
indexed.

``local-rag eval figures DATASET_DIR [--split tune|test] [--json]``: computations from tables — the share
right (the value within rounding, every operand the expected cell, cited on its page) and the computations
shown with an uncited operand (see ``eval/figures.py``), in this data folder's library.

``local-rag eval sentences DATASET_DIR [--json] [--misses]``: the share of the sentences a person reads on PDF
pages that the loader and the sentence splitter give back whole, per producer (see ``eval/sentences.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from localrag.core.progress import print_progress
from localrag.core.retrieve import MODES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="measure retrieval (nDCG@10, recall, MRR, latency) on a BEIR folder in a throw-away database",
    )
    p.add_argument(
        "dataset",
        nargs="+",
        metavar="DATASET_DIR",
        help="a BEIR folder (corpus.jsonl, queries*.jsonl, qrels/<split>.tsv), a page-hit folder "
        "(docs/ or pdfs/ and questions with file and pages), `answers DIR`: a "
        "folder of PDFs and questions with gold answers (datasets/debian-manuals), or `sentences DIR`: "
        "PDFs and the sentences read on their pages (datasets/pdf-sentences)",
    )
    p.add_argument(
        "--answer-mode",
        action="append",
        dest="answer_modes",
        choices=("evidence", "generated", "default"),
        help="answers: a mode to measure (repeatable; default: all three)",
    )
    p.add_argument("--limit", type=int, default=None, help="answers: only the first N questions")
    p.add_argument("--kind", action="append", dest="kinds", help="answers: only questions of this kind")
    p.add_argument(
        "--split",
        default=None,
        help="BEIR: which qrels to use (test or train; default test); answers and page datasets: the half "
        "of split.json whose questions are asked (tune or test; default all)",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        action="append",
        dest="modes",
        help="a mode to measure (repeatable; default: all three)",
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="where corpus vectors are cached (default: the data folder's cache/eval, "
        "or LOCALRAG_EVAL_CACHE)",
    )
    p.add_argument(
        "--route",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="page datasets: route questions to the documents they name (default: the routing setting)",
    )
    p.add_argument("--k", type=int, default=10, help="page datasets: passages per question (default 10)")
    p.add_argument(
        "--indexed-only",
        action="store_true",
        help="page datasets: ingest nothing; ask only the questions whose document is in the library",
    )
    p.add_argument("--dump", type=Path, help="reader: write the candidates of every question to this file")
    p.add_argument("--half", choices=("tune", "test"), help="reader/answers: only this half (split.json)")
    p.add_argument(
        "--fit", type=Path, action="append", help="reader: fit on these candidate files (repeatable)"
    )
    p.add_argument("--out", type=Path, help="reader: where the fitted weights go")
    p.add_argument(
        "--fit-cross",
        action="store_true",
        help="reader --fit DUMP... --out FILE: train the cross-encoder on the candidates instead (needs "
        "PyTorch and onnx) and write it as ONNX",
    )
    p.add_argument(
        "--requantize-cross",
        type=Path,
        metavar="MODEL",
        help="reader --out FILE: write a cross-encoder of float arithmetic again with its products in int8 "
        "(needs onnx)",
    )
    p.add_argument(
        "--without",
        action="append",
        metavar="FEATURE",
        help="reader --fit: leave out these features (repeatable; shell patterns such as 'token_*')",
    )
    p.add_argument("--c", type=float, action="append", help="reader: regularisation strengths to compare")
    p.add_argument(
        "--likelihood",
        type=Path,
        help="reader: with --fit DUMP, the language model's likelihood of each question after the reader's "
        "best spans, written to this file (read from it if it exists), and the answer measure reranked by it",
    )
    p.add_argument("--every", type=int, default=1, help="reader --likelihood: score every n-th question")
    p.add_argument("--gguf", type=Path, help="reader --likelihood: the GGUF (default: the bundled one)")
    p.add_argument(
        "--collection", metavar="NAME", help="page datasets and answers: search only this collection"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--misses", action="store_true", help="sentences: list the sentences not found whole")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.dataset[0] == "reader":
        return run_reader(args, [Path(d) for d in args.dataset[1:]])
    if args.dataset[0] == "answers" and len(args.dataset) == 2:
        return run_answers(args, Path(args.dataset[1]))
    if args.dataset[0] == "figures" and len(args.dataset) == 2:
        return run_figures(args, Path(args.dataset[1]))
    if args.dataset[0] == "sentences" and len(args.dataset) == 2:
        return run_sentences(args, Path(args.dataset[1]))
    if len(args.dataset) != 1:
        print(
            "local-rag: eval takes one DATASET_DIR, `answers DATASET_DIR` or `sentences DATASET_DIR`",
            file=sys.stderr,
        )
        return 2
    args.dataset = Path(args.dataset[0])
    from localrag.eval import pagehit

    if pagehit.is_page_dataset(args.dataset):
        return run_pages(args)
    from localrag.eval.beir import evaluate

    cache = args.cache_dir or (
        Path(os.environ["LOCALRAG_EVAL_CACHE"]) if os.environ.get("LOCALRAG_EVAL_CACHE") else None
    )
    report = evaluate(
        args.dataset,
        split=args.split or "test",
        modes=args.modes or MODES,
        cache_dir=cache,
        progress=print_progress,
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"{report['dataset']} ({report['split']}): {report['queries']} queries, {report['documents']} "
        f"documents, {report['chunks']} chunks, {report['model']}"
    )
    print(f"{'mode':8} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} {'p50 ms':>8} {'p95 ms':>8}")
    for mode, m in report["modes"].items():
        print(
            f"{mode:8} {m['ndcg@10']:8.4f} {m['recall@10']:7.4f} {m['recall@100']:7.4f} {m['mrr@10']:7.4f} "
            f"{m['latency_ms']['p50']:8.1f} {m['latency_ms']['p95']:8.1f}"
        )
    q = report["embed_query_ms"]
    print(
        f"(latency: retrieve with k=100 and the query vector cached; embedding a query: p50 {q['p50']} ms, "
        f"p95 {q['p95']} ms)"
    )
    return 0


def _run_report(args: argparse.Namespace, evaluate: Callable[[Callable[[str], None]], dict]) -> dict | None:
    """Run an evaluation with its progress on stderr; print the report as JSON with ``--json``. None (after
    saying why) when the dataset's files are missing."""
    try:
        report = evaluate(lambda line: print(line, file=sys.stderr, flush=True))
    except FileNotFoundError as exc:
        print(f"local-rag: {exc}", file=sys.stderr)
        return None
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    return report


def run_pages(args: argparse.Namespace) -> int:
    from localrag.eval import pagehit
    from localrag.eval.answers import HALVES

    half = args.half or args.split
    if half is not None and half not in HALVES:
        print(f"local-rag: a page dataset's --split is tune or test, not {half!r}", file=sys.stderr)
        return 2
    report = _run_report(
        args,
        lambda say: pagehit.evaluate(
            args.dataset,
            k=args.k,
            limit=args.limit,
            route=args.route,
            indexed_only=args.indexed_only,
            collection=args.collection,
            half=half,
            say=say,
        ),
    )
    if report is None:
        return 1
    if args.json:
        return 0
    which = f" ({half} half)" if half else ""
    print(
        f"{report['dataset']}{which}: {report['questions']} questions, page hit@k over {report['k']} passages"
    )
    print(
        f"{'setting':8} {'hit@1':>7} {'hit@5':>7} {'hit@10':>7} {'MRR@10':>7} {'span@5':>7} {'p50 ms':>8} "
        f"{'p95 ms':>8}"
    )
    for name, m in report["settings"].items():
        lat = m.get("latency_ms", {})
        span = f"{m['span@5']:7.3f}" if "span@5" in m else f"{'—':>7}"
        print(
            f"{name:8} {m['hit@1']:7.3f} {m['hit@5']:7.3f} {m['hit@10']:7.3f} {m['mrr@10']:7.3f} {span} "
            f"{lat.get('p50', 0):8.1f} {lat.get('p95', 0):8.1f}"
        )
    ingest = report.get("ingest", {})
    if ingest.get("indexed"):
        print(f"(ingested {ingest['indexed']} documents, {ingest['chunks']} chunks in {ingest['seconds']} s)")
    return 0


def run_answers(args: argparse.Namespace, folder: Path) -> int:
    from localrag.eval.answers import HALVES, MODES, evaluate

    half = args.half or args.split
    if half is not None and half not in HALVES:
        print(f"local-rag: eval answers --split is tune or test, not {half!r}", file=sys.stderr)
        return 2
    report = _run_report(
        args,
        lambda say: evaluate(
            folder,
            modes=args.answer_modes or MODES,
            limit=args.limit,
            kinds=args.kinds,
            half=half,
            collection=args.collection,
            say=say,
        ),
    )
    if report is None:
        return 1
    if args.json:
        return 0
    which = f" ({half} half; {report['documents_indexed']} documents indexed)" if half else ""
    print(f"{report['dataset']}{which}: {report['questions']} questions, model {report.get('model')}")
    print(
        f"{'mode':10} {'correct+cited':>13} {'page':>6} {'F1 ans':>7} {'F1 evid':>8} {'unsupp.':>8} "
        f"{'unmarked':>8} {'evid s':>7} {'ttft s':>7} {'total s':>8}"
    )
    for mode, m in report["modes"].items():
        s = m["summary"]
        print(
            f"{mode:10} {s['correct_and_cited']:13.3f} {s['gold_page_cited']:6.3f} {s['f1_answer']:7.3f} "
            f"{s['f1_evidence']:8.3f} {s['unsupported_shown_share']:8.3f} {s['unsupported_unmarked']:8d} "
            f"{s['evidence_s']['p50'] or 0:7.3f} {s['ttft_s']['p50'] or 0:7.3f} "
            f"{s['total_s']['p50'] or 0:8.3f}"
        )
        if "none_declined" in s:
            print(
                f"{'':10} unanswerable questions declined {s['none_declined']:.3f}, answerable ones declined "
                f"{s['answerable_declined']:.3f}"
            )
    return 0


def _requantize(model: Path, out: Path | None) -> int:
    from localrag.eval import cross_fit

    if not out:
        print("local-rag: eval reader --requantize-cross needs --out FILE", file=sys.stderr)
        return 2
    try:
        cross_fit.requantize(model, out)
    except ImportError as exc:
        print(f"local-rag: --requantize-cross needs onnx ({exc}): pip install onnx", file=sys.stderr)
        return 2
    print(json.dumps({"written": str(out)}))
    return 0


def run_reader(args: argparse.Namespace, folders: list[Path]) -> int:
    """``eval reader DIR... --dump FILE`` (the candidates) or ``eval reader --fit FILE... --out F`` (the
    weights); see ``eval/reader_fit.py``."""
    from localrag.eval import reader_fit

    if args.dump:
        n = reader_fit.dump(folders, args.dump, half=args.half, say=lambda s: print(s, file=sys.stderr))
        print(f"{n} questions written to {args.dump}")
        return 0
    if args.requantize_cross:
        return _requantize(args.requantize_cross, args.out)
    if not args.fit:
        print("local-rag: eval reader needs --dump FILE or --fit FILE", file=sys.stderr)
        return 2
    rows = reader_fit.without(reader_fit.load_dump(args.fit), args.without or [])
    if args.fit_cross:
        from localrag.eval import cross_fit

        if not args.out:
            print("local-rag: eval reader --fit-cross needs --out FILE", file=sys.stderr)
            return 2
        try:
            n = cross_fit.fit_cross(rows, args.out, say=lambda s: print(s, file=sys.stderr))
        except ImportError as exc:
            needs = f"needs PyTorch and onnx ({exc}): pip install torch onnx"
            print(f"local-rag: --fit-cross {needs}", file=sys.stderr)
            return 2
        print(json.dumps({"groups": n, "written": str(args.out)}))
        return 0
    if args.likelihood:
        if not args.likelihood.exists():
            from localrag.core.embed.model_files import default_gguf

            gguf = args.gguf or default_gguf()
            say = lambda s: print(s, file=sys.stderr)  # noqa: E731
            reader_fit.question_likelihoods(rows, gguf, args.likelihood, every=args.every, say=say)
        print(json.dumps(reader_fit.likelihood_report(rows, args.likelihood)))
        return 0
    report = {}
    for c in args.c or [1.0]:
        report[str(c)] = round(reader_fit.cross_validate(rows, c=c), 4)
        print(f"C={c}: cross-validated correct-and-cited {report[str(c)]}", file=sys.stderr)
    best_c = max(args.c or [1.0], key=lambda c: report[str(c)])
    model = reader_fit.fit(rows, c=best_c)
    fitted = reader_fit.simulate(rows, model)
    print(json.dumps({"cross_validated": report, "c": best_c, "fitted": fitted, "model": model.to_json()}))
    if args.out:
        args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    return 0


def run_figures(args: argparse.Namespace, folder: Path) -> int:
    from localrag.eval.answers import HALVES
    from localrag.eval.figures import evaluate

    half = args.half or args.split
    if half is not None and half not in HALVES:
        print(f"local-rag: eval figures --split is tune or test, not {half!r}", file=sys.stderr)
        return 2
    report = _run_report(args, lambda say: evaluate(folder, half=half, say=say))
    if report is None:
        return 1
    if args.json:
        return 0
    s = report["summary"]
    which = f" ({half} half)" if half else ""
    print(f"{report['dataset']}{which}: {s['questions']} questions")
    print(
        f"computations right {s['right']}/{s['computable']} ({s['right_share']}) · missing operand reported "
        f"{s['missing_reported']}/{s['missing_questions']} · shown with an uncited operand "
        f"{s['uncited_shown']}"
        f" · wrong ones shown {s['wrong_shown']}"
    )
    for row in report["rows"]:
        if not row["right"]:
            first = row["shown"].splitlines()[0] if row["shown"] else ""
            print(f"  ✗ {row['id']}: {row.get('why', row['status'])} — {first}")
    return 0


def run_sentences(args: argparse.Namespace, folder: Path) -> int:
    from localrag.eval.sentences import evaluate

    report = _run_report(args, lambda say: evaluate(folder, say=say))
    if report is None:
        return 1
    if args.json:
        return 0
    print(f"{report['dataset']}: {report['sentences']} sentences from {report['files']} PDFs")
    print(f"{'split':6} {'producer':12} {'sentences':>9} {'whole':>6} {'share':>6}")
    for split, part in report["splits"].items():
        for name, m in part["producers"].items():
            print(f"{split:6} {name:12} {m['sentences']:9d} {m['whole']:6d} {m['share']:6.3f}")
        print(f"{split:6} {'all':12} {part['sentences']:9d} {part['whole']:6d} {part['share']:6.3f}")
    if args.misses:
        for miss in report["misses"]:
            print(f"  [{miss['split']}] {miss['file']} p.{miss['page']}: {miss['sentence']}")
    return 0
