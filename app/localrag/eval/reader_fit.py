"""Fitting the reader (``core/answer/reader.py``) on a tuning set of questions with gold answers and pages.

``local-rag eval reader DATASET_DIR... --dump FILE [--half tune]`` asks every question of the datasets the way
``ask`` does with the sources leading (no language model), and writes one JSON line per question: the
question, its kind, and every candidate span the reader saw, with its features and whether it answers (on the
gold page, and token F1 ≥ 0.4 against the gold answer or sentence — the answer benchmark's own test).

``local-rag eval reader --fit FILE... --out resources/reader/reader_model.json`` fits a logistic model on
those lines (scikit-learn, needed only here: ``pip install scikit-learn``), chooses the probability under
which nothing is quoted and the share a second span needs, by the benchmark's measure on the same lines, and
writes the weights the app reads. Report the result on a test half you did not fit on (``eval answers``).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from localrag.core.answer.reader import ReaderModel
from localrag.eval.answers import CORRECT_F1, Question, load_questions, token_f1

NONE_KIND = "none"


def dataset_questions(folder: Path, half: str | None) -> list[Question]:
    """The questions of ``folder``; with ``half`` (``tune``/``test``), those of that half's documents
    (``split.json``: ``{"tune": [files], "test": [files]}``)."""
    questions = load_questions(folder)
    if not half:
        return questions
    split = json.loads((folder / "split.json").read_text(encoding="utf-8"))
    files = set(split[half])
    return [q for q in questions if q.file in files or set(getattr(q, "files", []) or []) & files]


def label(q: Question, text: str, path: str, page: int) -> bool:
    """Whether a span answers ``q``: on its gold page, and close enough to its answer or sentence."""
    if q.kind == NONE_KIND or not q.answer:
        return False
    on_page = Path(path).name == q.file and page == q.page
    return on_page and max(token_f1(text, q.answer), token_f1(text, q.evidence)) >= CORRECT_F1


def dump(
    folders: Sequence[Path], out: Path, *, half: str | None = None, say: Callable[[str], None] = print
) -> int:
    """Index each dataset's documents in this data folder's library, ask its questions with the sources
    leading, and write the reader's candidates with their labels to ``out``. Returns the questions written."""
    from localrag.core.answer.engine import ChatEngine, Done
    from localrag.core.ingest.pipeline import index_paths
    from localrag.core.library import Library

    library = Library(owner=True)
    library.open()
    written = 0
    try:
        library.settings.answer_lead = "sources"
        library.settings.reword = False
        engine = ChatEngine(library, None)
        engine.evidence_keep = 100_000
        with out.open("w", encoding="utf-8") as f:
            for folder in folders:
                docs = folder / "docs" if (folder / "docs").is_dir() else folder / "pdfs"
                summary = index_paths(library, sorted(p for p in docs.iterdir() if p.is_file()))
                say(f"{folder.name}: {summary.ready} newly indexed")
                questions = [q for q in dataset_questions(folder, half) if q.kind != "document"]
                for i, q in enumerate(questions, 1):
                    done = next(
                        (e for e in engine.ask(None, q.question, persist=False) if isinstance(e, Done)), None
                    )
                    evidence = done.evidence if done is not None else None
                    spans = evidence.candidates if evidence is not None else []
                    f.write(
                        json.dumps(
                            {
                                "id": q.id,
                                "dataset": folder.name,
                                "kind": q.kind,
                                "question": q.question,
                                "answer": q.answer,
                                "evidence": q.evidence,
                                "file": q.file,
                                "page": q.page,
                                "candidates": [
                                    {
                                        "text": s.text,
                                        "path": Path(s.path).name,
                                        "page": s.page_number,
                                        "number": s.number,
                                        "start": s.char_start,
                                        "features": s.features,
                                        "label": label(q, s.text, s.path, s.page_number),
                                    }
                                    for s in spans
                                ],
                            }
                        )
                        + "\n"
                    )
                    written += 1
                    say(f"{folder.name} {i}/{len(questions)} {q.id}: {len(spans)} candidates")
    finally:
        library.close()
    return written


def load_dump(paths: Iterable[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def feature_names(rows: list[dict[str, Any]]) -> list[str]:
    names: set[str] = set()
    for r in rows:
        for c in r["candidates"]:
            names |= set(c["features"])
    return sorted(names - {"lexical_covered"})


def fit(rows: list[dict[str, Any]], *, c: float = 1.0, seed: int = 0) -> ReaderModel:
    """A logistic model of "this span answers" over the candidates of ``rows``, with the threshold and the
    second span's share chosen by the measure (``simulate``) on the same rows."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    names = feature_names(rows)
    x = np.array([[cand["features"].get(n, 0.0) for n in names] for r in rows for cand in r["candidates"]])
    y = np.array([cand["label"] for r in rows for cand in r["candidates"]], dtype=int)
    means = x.mean(axis=0)
    scales = x.std(axis=0)
    scales[scales < 1e-9] = 1.0
    lr = LogisticRegression(C=c, max_iter=2000, class_weight="balanced", random_state=seed)
    lr.fit((x - means) / scales, y)
    base = ReaderModel(
        names=tuple(names),
        weights=tuple(float(w) for w in lr.coef_[0]),
        means=tuple(float(m) for m in means),
        scales=tuple(float(s) for s in scales),
        intercept=float(lr.intercept_[0]),
        threshold=0.5,
        second=1.0,
        fitted_on=f"{len(rows)} questions, {len(y)} candidates ({int(y.sum())} answer), C={c}",
    )
    best = (-1.0, 0.5, 1.0)
    for threshold in [i / 40 for i in range(1, 40)]:
        for second in (0.8, 0.9, 0.95, 1.01):
            m = _with(base, threshold, second)
            score = simulate(rows, m)["correct_and_cited"]
            if score > best[0] + 1e-9:
                best = (score, threshold, second)
    return _with(base, best[1], best[2])


def _with(m: ReaderModel, threshold: float, second: float) -> ReaderModel:
    return ReaderModel(m.names, m.weights, m.means, m.scales, m.intercept, threshold, second, m.fitted_on)


def simulate(rows: list[dict[str, Any]], model: ReaderModel) -> dict[str, Any]:
    """The answer benchmark's measure as the reader's choice alone would give it: the best span quoted (and a
    second beside it when nearly as likely) if it reaches the threshold; a question the documents do not
    answer is right when nothing is quoted."""
    right = on_page = 0
    wrong_sentence = 0
    for r in rows:
        cands = r["candidates"]
        probs = [model.probability(c["features"]) for c in cands]
        order = sorted(range(len(cands)), key=lambda i: probs[i], reverse=True)
        if not order or probs[order[0]] < model.threshold:
            right += r["kind"] == NONE_KIND
            continue
        if r["kind"] == NONE_KIND:
            continue
        shown = [order[0]] + [
            i
            for i in order[1:2]
            if probs[i] >= model.second * probs[order[0]] and not _overlap(cands, i, order[0])
        ]
        text = " ".join(cands[i]["text"] for i in shown)
        gold = (r.get("file") or "", r.get("page") or 0)
        page_hit = any(cands[i]["label"] for i in shown) or any(
            (cands[i]["path"], cands[i]["page"]) == gold for i in shown
        )
        ok = (
            any(cands[i]["label"] for i in shown)
            and max(token_f1(text, r["answer"]), token_f1(text, r["evidence"])) >= CORRECT_F1
        )
        right += ok
        on_page += page_hit
        wrong_sentence += page_hit and not ok
    n = max(1, len(rows))
    return {
        "questions": len(rows),
        "correct_and_cited": round(right / n, 4),
        "answerable_with_a_right_candidate": round(
            sum(1 for r in rows if any(c["label"] for c in r["candidates"])) / n, 4
        ),
    }


def _overlap(cands: list[dict[str, Any]], i: int, j: int) -> bool:
    a, b = cands[i], cands[j]
    if a["path"] != b["path"] or a["page"] != b["page"] or a["start"] < 0 or b["start"] < 0:
        return a["text"] == b["text"]
    return a["start"] < b["start"] + len(b["text"]) and b["start"] < a["start"] + len(a["text"])


def cross_validate(rows: list[dict[str, Any]], *, c: float, folds: int = 5, seed: int = 0) -> float:
    """The mean measure on held-out folds of whole datasets' questions (grouped by document)."""
    groups = sorted({(r["dataset"], r["id"].rsplit("-", 1)[0]) for r in rows})
    random.Random(seed).shuffle(groups)
    scores = []
    for k in range(folds):
        held = set(groups[k::folds])
        train = [r for r in rows if (r["dataset"], r["id"].rsplit("-", 1)[0]) not in held]
        test = [r for r in rows if (r["dataset"], r["id"].rsplit("-", 1)[0]) in held]
        if train and test:
            scores.append(simulate(test, fit(train, c=c))["correct_and_cited"])
    return sum(scores) / len(scores) if scores else math.nan
