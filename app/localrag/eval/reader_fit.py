"""Fitting the reader (``core/answer/reader.py``) on a tuning set of questions with gold answers and pages.

``local-rag eval reader DATASET_DIR... --dump FILE [--half tune]`` asks every question of the datasets the way
``ask`` does with the sources leading (no language model), and writes one JSON line per question: the
question, its kind, and every candidate span the reader saw, with its features and whether it answers (on the
gold page, and token F1 ≥ 0.4 against the gold answer or sentence — the answer benchmark's own test).

``local-rag eval reader --fit FILE... --out resources/reader/reader_model.json`` fits a logistic model on
those lines (scikit-learn, needed only here: ``pip install scikit-learn``), chooses the probability under
which nothing is quoted and the share a second span needs, by the benchmark's measure on the same lines, and
writes the weights the app reads. Report the result on a test half you did not fit on (``eval answers``).
``--without FEATURE`` (repeatable, shell patterns) fits and cross-validates without those features on the very
same candidates: what a feature adds, with nothing else changed.

``local-rag eval reader --fit FILE --likelihood SCORES`` measures a signal the app does not ship: the bundled
language model's likelihood of the question after each of the reader's best spans (``question_likelihoods``),
and the measure with the spans reranked by it (``likelihood_report``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from localrag.core.answer.evidence import PASSAGES
from localrag.core.answer.reader import ANSWERS_SIGNALS, AnswersModel, ReaderModel
from localrag.eval.answers import (
    CORRECT_F1,
    Question,
    dataset_documents,
    half_questions,
    load_questions,
    token_f1,
)

NONE_KIND = "none"
# What a domain pack adds (``reader.SpanFacts.domain``) is not fitted: a tuning set of ordinary documents has
# none. It carries this fixed weight in log-odds, enough for a row the pack names to pass the sentences that
# merely repeat the question's words.
DOMAIN, DOMAIN_WEIGHT = "domain", 3.0


def dataset_questions(folder: Path, half: str | None) -> list[Question]:
    """The questions of ``folder``; with ``half`` (``tune``/``test``), those of that half's documents."""
    questions = load_questions(folder)
    return half_questions(folder, questions, half) if half else questions


def label(q: Question, text: str, path: str, page: int) -> bool:
    """Whether a span answers ``q``: on a gold page, and close enough to its answer or sentence."""
    if q.kind == NONE_KIND or not q.answer:
        return False
    on_page = (Path(path).name, page) in q.gold_pages()
    return on_page and max(token_f1(text, q.answer), token_f1(text, q.evidence)) >= CORRECT_F1


def dump(
    folders: Sequence[Path], out: Path, *, half: str | None = None, say: Callable[[str], None] = print
) -> int:
    """Index each dataset's documents in this data folder's library, ask its questions with the sources
    leading, and write the reader's candidates with their labels to ``out``. Returns the questions written."""
    from localrag.core.answer.engine import ChatEngine
    from localrag.core.answer.events import Done
    from localrag.core.answer.request import AskRequest
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
                summary = index_paths(library, dataset_documents(folder))
                say(f"{folder.name}: {summary.ready} newly indexed")
                questions = [q for q in dataset_questions(folder, half) if q.kind != "document"]
                for i, q in enumerate(questions, 1):
                    events = engine.ask(AskRequest(q.question, persist=False))
                    done = next((e for e in events if isinstance(e, Done)), None)
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
                                "signals": evidence.signals if evidence is not None else {},
                                "passages": [
                                    [Path(s.path).name, s.page_number]
                                    for s in (done.sources if done is not None else [])[:PASSAGES]
                                ],
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


def without(rows: list[dict[str, Any]], patterns: Sequence[str]) -> list[dict[str, Any]]:
    """``rows`` with the candidates' features matching any of ``patterns`` (shell patterns) left out: the
    fit and its cross-validation without them, on the very same candidates."""
    from fnmatch import fnmatchcase

    if not patterns:
        return rows

    def kept(features: dict[str, float]) -> dict[str, float]:
        return {k: v for k, v in features.items() if not any(fnmatchcase(k, p) for p in patterns)}

    return [
        {**r, "candidates": [{**c, "features": kept(c["features"])} for c in r["candidates"]]} for r in rows
    ]


def feature_names(rows: list[dict[str, Any]]) -> list[str]:
    names: set[str] = set()
    for r in rows:
        for c in r["candidates"]:
            names |= set(c["features"])
    # ``cross`` is the cross-encoder's score of the reader's best few (``core/answer/cross``), not a feature.
    return sorted(names - {"lexical_covered", "covered", "cross", DOMAIN})


def fit(rows: list[dict[str, Any]], *, c: float = 1.0) -> ReaderModel:
    """The reader's model fitted on the candidates of ``rows``.

    The weights are those of a conditional logit: for each question with an answering candidate, the softmax
    of the candidates' scores should put the answering ones first (a span is judged against its rivals, as the
    app picks one). ``c`` is the inverse strength of the L2 penalty. The scores are then calibrated into
    probabilities by a one-feature logistic fit of "the question's best-scored span answers it", the
    threshold and the second span's share are chosen by the measure (``simulate``) on the same rows, and the
    signal of whether the documents answer at all is fitted on them (``fit_answers``)."""
    import numpy as np
    from scipy.optimize import minimize

    names = feature_names(rows)
    mats = [_matrix(r, names) for r in rows]
    every = np.vstack([x for x, _ in mats if len(x)])
    means, scales = every.mean(axis=0), every.std(axis=0)
    scales[scales < 1e-9] = 1.0
    groups = [((x - means) / scales, y) for x, y in mats if len(x) and y.any()]

    def loss(w: Any) -> tuple[float, Any]:
        total, grad = 0.5 * float(w @ w) / c, w / c
        for x, y in groups:
            z = x @ w
            top = z.max()
            p_all = np.exp(z - top)
            p_all /= p_all.sum()
            p_pos = np.where(y, np.exp(z - top), 0.0)
            p_pos /= p_pos.sum()
            total -= math.log(float(np.exp(z - top)[y].sum())) - math.log(float(np.exp(z - top).sum()))
            grad = grad - x.T @ (p_pos - p_all)
        return total, grad

    w = minimize(loss, np.zeros(len(names)), jac=True, method="L-BFGS-B").x
    # Calibration: the best-scored span of each question, answering or not (questions the documents do not
    # answer included), as one logistic feature.
    tops, hits = [], []
    for x, y in mats:
        if not len(x):
            continue
        z = ((x - means) / scales) @ w
        i = int(z.argmax())
        tops.append(z[i])
        hits.append(bool(y[i]))
    a, b = _calibrate(np.array(tops), np.array(hits, dtype=float))
    base = ReaderModel(
        names=(*names, DOMAIN),
        weights=(*(float(v) for v in a * w), DOMAIN_WEIGHT),
        means=(*(float(m) for m in means), 0.0),
        scales=(*(float(s) for s in scales), 1.0),
        intercept=float(b),
        threshold=0.5,
        second=1.01,
        fitted_on=f"{len(rows)} questions, {len(every)} candidates, conditional logit, C={c}",
    )
    best = (-1.0, 0.5, 1.01)
    prepared = prepare(rows, base)
    for threshold in [i / 50 for i in range(1, 50)]:
        for second in (0.7, 0.8, 0.9, 0.95, 1.01):
            score = simulate(rows, _with(base, threshold, second), prepared)["correct_and_cited"]
            if score > best[0] + 1e-9:
                best = (score, threshold, second)
    return fit_answers(rows, _with(base, best[1], best[2]))


def _matrix(row: dict[str, Any], names: list[str]) -> tuple[Any, Any]:
    import numpy as np

    cands = row["candidates"]
    x = np.array([[c["features"].get(n, 0.0) for n in names] for c in cands], dtype=float).reshape(
        len(cands), len(names)
    )
    return x, np.array([bool(c["label"]) for c in cands], dtype=bool)


def _calibrate(s: Any, y: Any) -> tuple[float, float]:
    """``a``, ``b`` of ``P(y) = 1 / (1 + exp(-(a s + b)))``, a lightly regularised logistic fit."""
    from sklearn.linear_model import LogisticRegression

    if y.min() == y.max():
        return 1.0, 0.0
    lr = LogisticRegression(C=1.0).fit(s.reshape(-1, 1), y.astype(int))
    return float(lr.coef_[0][0]), float(lr.intercept_[0])


def _with(
    m: ReaderModel, threshold: float, second: float, answers: AnswersModel | None = None
) -> ReaderModel:
    return ReaderModel(
        m.names, m.weights, m.means, m.scales, m.intercept, threshold, second, m.fitted_on, answers
    )


def prepare(rows: list[dict[str, Any]], model: ReaderModel) -> list[Any]:
    """Each row's candidates' probabilities under ``model`` (they do not depend on the threshold)."""
    import numpy as np

    w = np.array(model.weights) / np.array(model.scales)
    shift = model.intercept - float(w @ np.array(model.means))
    out = []
    for r in rows:
        x, _ = _matrix(r, list(model.names))
        out.append(1.0 / (1.0 + np.exp(-np.clip(x @ w + shift, -30, 30))) if len(x) else np.zeros(0))
    return out


# Where a second span may come from, for ``simulate``'s ``beside``: anywhere (what the evidence step does),
# the best span's document, its page, only right after or before it, or only for a question asking for a list.
BESIDE = ("any", "document", "page", "adjacent", "list")


def simulate(
    rows: list[dict[str, Any]],
    model: ReaderModel,
    prepared: list[Any] | None = None,
    *,
    beside: str = "any",
) -> dict[str, Any]:
    """The answer benchmark's measure as the reader's choice alone would give it: the best span that is not a
    heading quoted (and a second beside it when nearly as likely and allowed by ``beside``, one of
    ``BESIDE``) unless the model declines (``ReaderModel.declines``); a question the documents do not answer
    is right when nothing is quoted. ``wrong_sentence``: the gold page quoted, the answer not;
    ``none_declined`` and ``answerable_declined``: the shares of each kind declined; ``second_quoted``: the
    share of questions quoting a second span."""
    probs_of = prepared if prepared is not None else prepare(rows, model)
    results = [_result(r, probs, model, beside) for r, probs in zip(rows, probs_of, strict=True)]
    seconds = sum(res.endswith(PAIRED) for res in results)
    results = [res.removesuffix(PAIRED) for res in results]
    n = max(1, len(rows))
    nones = [res for r, res in zip(rows, results, strict=True) if r["kind"] == NONE_KIND]
    others = [res for r, res in zip(rows, results, strict=True) if r["kind"] != NONE_KIND]
    return {
        "questions": len(rows),
        "correct_and_cited": round(sum(res in (RIGHT, DECLINED_RIGHT) for res in results) / n, 4),
        "wrong_sentence": round(sum(res == WRONG_SENTENCE for res in results) / n, 4),
        "none_declined": round(sum(res == DECLINED_RIGHT for res in nones) / max(1, len(nones)), 4),
        "answerable_declined": round(sum(res == DECLINED for res in others) / max(1, len(others)), 4),
        "answerable_with_a_right_candidate": round(
            sum(1 for r in rows if any(c["label"] for c in r["candidates"])) / n, 4
        ),
        "second_quoted": round(seconds / n, 4),
    }


RIGHT, WRONG, WRONG_SENTENCE = "right", "wrong", "wrong sentence"
DECLINED, DECLINED_RIGHT = "declined", "none"
PAIRED = "+2"


def signals(row: dict[str, Any], probs: Any) -> dict[str, float]:
    """The row's signals of whether the documents answer (``reader.ANSWERS_SIGNALS``), with the best span's
    probability and its lead under the model at hand."""
    top = sorted((float(p) for p in probs), reverse=True)[:2]
    out = dict(row.get("signals") or {})
    out["top"] = top[0] if top else 0.0
    out["margin"] = top[0] - top[1] if len(top) > 1 else out["top"]
    return out


def _result(r: dict[str, Any], probs: Any, model: ReaderModel, beside: str = "any") -> str:
    cands = r["candidates"]
    # A heading is never quoted (``evidence._choose``).
    order = [
        i
        for i in sorted(range(len(cands)), key=lambda i: float(probs[i]), reverse=True)
        if not cands[i]["features"].get("heading")
    ]
    if not order or model.declines(signals(r, probs)):
        return DECLINED_RIGHT if r["kind"] == NONE_KIND else DECLINED
    if r["kind"] == NONE_KIND:
        return WRONG
    shown = [order[0]]
    # As ``evidence._choose``: the likeliest span above the share, not overlapping the best, and allowed.
    for i in order[1:]:
        if probs[i] < model.second * probs[order[0]]:
            break
        if not _overlap(cands, i, order[0]) and _allowed(cands[order[0]], cands[i], beside):
            shown.append(i)
            break
    text = " ".join(cands[i]["text"] for i in shown)
    page_hit = any((cands[i]["path"], cands[i]["page"]) == (r.get("file"), r.get("page")) for i in shown)
    ok = (
        any(cands[i]["label"] for i in shown)
        and max(token_f1(text, r["answer"]), token_f1(text, r["evidence"])) >= CORRECT_F1
    )
    return (RIGHT if ok else WRONG_SENTENCE if page_hit else WRONG) + (PAIRED if len(shown) > 1 else "")


def _allowed(best: dict[str, Any], other: dict[str, Any], beside: str) -> bool:
    """Whether ``other`` may be quoted beside ``best`` under the rule ``beside`` (one of ``BESIDE``)."""
    if beside == "list":
        return bool(best["features"].get("list_asked"))
    if beside == "any":
        return True
    if beside == "document":
        return bool(other["path"] == best["path"])
    if other["path"] != best["path"] or other["page"] != best["page"]:
        return False
    if beside == "page":
        return True
    a, b = sorted((best, other), key=lambda c: int(c["start"]))
    return int(a["start"]) >= 0 and 0 <= int(b["start"]) - int(a["start"]) - len(a["text"]) <= ADJACENT


# Characters between two spans that still continue one another (the whitespace of a line or page break).
ADJACENT = 3


def cross_validate_beside(
    rows: list[dict[str, Any]], model: ReaderModel, *, folds: int = 4, seed: int = 0
) -> dict[str, Any]:
    """Whether a rule for the second span helps, by whole documents: for each fold, the rule of ``BESIDE``
    and the second span's share (never: above 1) that score best on the other folds' questions under
    ``model``, scored on the fold's. Returns the held-out measure of the rules chosen so, of the shipped rule
    (``any`` at ``model.second``), and which rules were chosen."""
    groups = sorted({(r["dataset"], r.get("file") or r["id"]) for r in rows})
    random.Random(seed).shuffle(groups)
    prepared = prepare(rows, model)
    chosen_right = shipped_right = 0.0
    chosen: list[str] = []
    for k in range(folds):
        held = set(groups[k::folds])
        inside = [
            (r, p)
            for r, p in zip(rows, prepared, strict=True)
            if (r["dataset"], r.get("file") or r["id"]) in held
        ]
        outside = [
            (r, p)
            for r, p in zip(rows, prepared, strict=True)
            if (r["dataset"], r.get("file") or r["id"]) not in held
        ]
        if not inside or not outside:
            continue

        def measure(pairs: list[tuple[dict[str, Any], Any]], second: float, beside: str) -> float:
            rs, ps = [r for r, _ in pairs], [p for _, p in pairs]
            m = _with(model, model.threshold, second, model.answers)
            return float(simulate(rs, m, ps, beside=beside)["correct_and_cited"]) * len(rs)

        rules = [(second, beside) for beside in BESIDE for second in (0.7, 0.8, 0.9, 0.95)] + [(1.01, "any")]
        # Ties keep the shipped rule, then the earlier (broader) one.
        best = max(rules, key=lambda sb: (round(measure(outside, *sb), 6), sb == (model.second, "any")))
        chosen.append(f"{best[1]} {best[0]}")
        chosen_right += measure(inside, *best)
        shipped_right += measure(inside, model.second, "any")
    n = max(1, len(rows))
    return {"chosen": round(chosen_right / n, 4), "shipped": round(shipped_right / n, 4), "rules": chosen}


def fit_answers(rows: list[dict[str, Any]], model: ReaderModel, *, c: float = 1.0) -> ReaderModel:
    """``model`` with an ``AnswersModel``: a logistic fit of "the question is answerable" (its kind is not
    ``none``) over the signals of ``rows``, and the probability under which it declines chosen by the
    benchmark's measure on the same rows (declining a question the documents do not answer is right; declining
    one they answer loses it when the reader would have got it right)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    names = list(ANSWERS_SIGNALS)
    bare = _with(model, model.threshold, model.second)
    prepared = prepare(rows, bare)
    x = np.array([[signals(r, p).get(n, 0.0) for n in names] for r, p in zip(rows, prepared, strict=True)])
    y = np.array([r["kind"] != NONE_KIND for r in rows], dtype=int)
    if y.min() == y.max():
        return bare
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales < 1e-9] = 1.0
    lr = LogisticRegression(C=c, class_weight="balanced").fit((x - means) / scales, y)
    w = lr.coef_[0] / scales
    answers = AnswersModel(
        names=tuple(names),
        weights=tuple(float(v) for v in w),
        intercept=float(lr.intercept_[0] - w @ means),
        threshold=0.0,
    )
    best = (-1.0, 0.0)
    for threshold in [i / 40 for i in range(0, 40)]:
        m = _with(bare, bare.threshold, bare.second, dataclasses.replace(answers, threshold=threshold))
        score = simulate(rows, m, prepared)["correct_and_cited"]
        if score > best[0] + 1e-9:
            best = (score, threshold)
    return _with(bare, bare.threshold, bare.second, dataclasses.replace(answers, threshold=best[1]))


def _overlap(cands: list[dict[str, Any]], i: int, j: int) -> bool:
    a, b = cands[i], cands[j]
    if a["path"] != b["path"] or a["page"] != b["page"] or a["start"] < 0 or b["start"] < 0:
        return a["text"] == b["text"]
    return a["start"] < b["start"] + len(b["text"]) and b["start"] < a["start"] + len(a["text"])


def cross_validate(rows: list[dict[str, Any]], *, c: float, folds: int = 4, seed: int = 0) -> float:
    """The mean measure on held-out folds, each fold a set of whole documents' questions."""
    groups = sorted({(r["dataset"], r.get("file") or r["id"]) for r in rows})
    random.Random(seed).shuffle(groups)
    scores = []
    for k in range(folds):
        held = set(groups[k::folds])
        train = [r for r in rows if (r["dataset"], r.get("file") or r["id"]) not in held]
        test = [r for r in rows if (r["dataset"], r.get("file") or r["id"]) in held]
        if train and test:
            scores.append(simulate(test, fit(train, c=c))["correct_and_cited"] * len(test))
    return sum(scores) / len(rows) if scores else math.nan


# -- the language model's likelihood of the question, read beside the reader --------------------------------
# Measured, not shipped: the bundled language model's log-probability of the question after a span, per
# token and against the question alone (pointwise mutual information), for the reader's best few
# candidates; the reader's log-odds plus ``alpha`` times its z-score within the question rerank them. The
# figures and why it is not in the app are in docs/benchmarks.md ("Documents and questions nobody tuned for").
LM_TOP = 4
LM_SPAN_TOKENS = 120


def question_likelihoods(
    rows: list[dict[str, Any]],
    gguf: Path,
    out: Path,
    *,
    top: int = LM_TOP,
    every: int = 1,
    say: Callable[[str], None] = print,
) -> int:
    """For each row with an answering candidate, ``log P(question | span) - log P(question)`` per question
    token under the language model ``gguf``, for the ``top`` candidates the shipped reader ranks first (of
    every ``every``-th row: the model is slow on a busy machine); one JSON line per row (``id``, ``scores``:
    candidate index → score, ``seconds``). Returns the rows written."""
    import time

    import numpy as np

    from localrag.core.answer import reader
    from localrag.core.llm import openmp
    from localrag.core.llm.backends import cpu_backend

    openmp.configure()
    from llama_cpp import Llama

    cpu_backend()
    llm = Llama(model_path=str(gguf), n_ctx=1024, n_batch=512, logits_all=True, verbose=False)

    def tokens(text: str) -> list[int]:
        return list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def logprob(prefix: list[int], target: list[int]) -> float:
        seq = [llm.token_bos(), *prefix, *target]
        llm.reset()
        llm.eval(seq)
        logits = np.asarray(llm.scores[: len(seq)], dtype=np.float64)
        total = 0.0
        for i in range(len(seq) - len(target), len(seq)):
            row = logits[i - 1]
            top_logit = row.max()
            total += float(row[seq[i]] - top_logit - math.log(float(np.exp(row - top_logit).sum())))
        return total

    probs = prepare(rows, reader.model())
    written = 0
    with out.open("w", encoding="utf-8") as f:
        for n, (r, p) in enumerate(zip(rows, probs, strict=True)):
            if n % every or not any(c["label"] for c in r["candidates"]):
                continue
            started = time.monotonic()
            asked = tokens(" " + r["question"])
            alone = logprob(tokens("Question:"), asked)
            scores = {}
            for i in (int(i) for i in np.argsort(-p)[:top]):
                span = tokens(" ".join(r["candidates"][i]["text"].split())[:800])[:LM_SPAN_TOKENS]
                before = [*tokens("Passage: "), *span, *tokens("\nQuestion:")]
                scores[i] = (logprob(before, asked) - alone) / max(1, len(asked))
            seconds = time.monotonic() - started
            f.write(json.dumps({"id": r["id"], "scores": scores, "seconds": round(seconds, 3)}) + "\n")
            written += 1
            say(f"{r['id']}: {len(scores)} spans in {seconds:.2f} s")
    return written


def rerank(rows: list[dict[str, Any]], scored: dict[str, dict[str, float]], alpha: float) -> list[Any]:
    """The shipped reader's probabilities of ``rows``' candidates, those scored by the language model moved
    by ``alpha`` times their score's z-score within the question (in log-odds)."""
    import numpy as np

    from localrag.core.answer import reader

    out = []
    for r, p in zip(rows, prepare(rows, reader.model()), strict=True):
        s = scored.get(r["id"])
        if s and alpha:
            p = p.copy()
            idx = [int(i) for i in s]
            v = np.array([s[i] for i in s], dtype=float)
            z = (v - v.mean()) / (v.std() + 1e-9)
            q = np.clip(p[idx], 1e-9, 1 - 1e-9)
            p[idx] = 1.0 / (1.0 + np.exp(-(np.log(q / (1 - q)) + alpha * z)))
        out.append(p)
    return out


def likelihood_report(
    rows: list[dict[str, Any]], scored_file: Path, alphas: Sequence[float] = (0.0, 0.25, 0.5, 1.0, 2.0)
) -> dict[str, Any]:
    """The answer measure (``simulate``, the shipped reader's threshold and signal) on the rows the language
    model scored, for each ``alpha`` of ``rerank``; with the seconds it took per question."""
    lines = [json.loads(x) for x in scored_file.read_text(encoding="utf-8").splitlines() if x.strip()]
    scored = {x["id"]: x["scores"] for x in lines}
    seconds = sorted(x["seconds"] for x in lines if "seconds" in x)
    kept = [r for r in rows if r["id"] in scored]
    from localrag.core.answer import reader

    model = reader.model()
    return {
        "questions": len(kept),
        "seconds_p50": seconds[len(seconds) // 2] if seconds else math.nan,
        "by_alpha": {str(a): simulate(kept, model, rerank(kept, scored, a)) for a in alphas},
    }
