"""The answer taken from the sources: the sentences of the retrieved passages that best answer the question.

A small language model cannot be trusted to restate a passage; the passage itself can be. For each grounded
question the sentences of the best passages (and runs of two or three of them, so a lead-in comes with the
line that finishes it) are candidates; the reader (``reader``) gives each the probability that it is the
answer, from learned weights, and the best one or two are shown as the answer, each with its source number,
page and character offsets (so the viewer highlights exactly that span).

When even the best span's probability is under the reader's threshold the documents do not seem to answer the
question: nothing is quoted as an answer, and the closest passages are listed instead.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from localrag.core import hooks
from localrag.core.answer import cross, reader
from localrag.core.answer.candidates import (
    LABEL,
    Candidate,
    bm25_of,
    has_figures,
    heading_match,
    heads,
    is_term,
    joined,
    lexical,
    novelty,
    passage_best,
    passage_candidates,
    passage_similarity,
    question_terms,
    semantic_ranks,
    term_weights,
    to_read,
)
from localrag.core.answer.pages import section_at
from localrag.core.answer.quotes import ANSWERED, NOT_FOUND, Evidence, EvidenceSpan
from localrag.core.text import spans as sp
from localrag.core.text.cells import (
    cells_of,
    is_figures_row,
    split_row,
)

# How many of the best passages are read for sentences.
PASSAGES = 5
# Runs of up to this many consecutive sentences are candidates too.
MAX_RUN = 3
MAX_SPANS = 2
# A lead-in's list is quoted with it up to this many items.
MAX_ITEMS = 8
PART_SHARE = 0.5


def question_kind(question: str) -> str:
    """What the question asks for, in one word (``identifier``, ``number``, ``list``, ``yesno``, ``why``,
    ``how`` or ``""``)."""
    return reader.Asks.of(question).kind


def find_evidence(
    question: str,
    sources: Sequence[Any],
    embed: Callable[[list[str]], np.ndarray] | None,
    *,
    question_vector: np.ndarray | None = None,
    keep: int = 8,
    pages: dict[tuple[int, int], str] | None = None,
    sections: dict[tuple[int, int], list[tuple[int, str]]] | None = None,
) -> Evidence:
    """The spans of ``sources`` (numbered from 1, best first) that best answer ``question``.

    A question in two parts ("why …, and how should I …?") gets the best span for each part as well.

    Args:
        embed: the embedding model (a list of texts → unit vectors); ``None`` reads by words alone.
        question_vector: the question's vector when already at hand (retrieval computed it).
        keep: how many of the best candidates ``Evidence.candidates`` keeps (the developer pane).
        pages: the text of the sources' pages by ``(doc_id, page_number)``: a quoted row of figures is read as
            cells under the column headings above it (``cells``).
        sections: where sections begin on the sources' pages (``pages.page_sections``): each quoted span is
            named by the one it is in.
    """
    started = time.monotonic()
    asks = reader.Asks.of(question)
    kind = asks.kind
    candidates = passage_candidates(sources[:PASSAGES])
    parts = question_parts(question)
    if not candidates or (not question_terms(question) and embed is None):
        return Evidence(NOT_FOUND, closest=_closest(sources), kind=kind, seconds=time.monotonic() - started)
    weights = term_weights(question_terms(question), candidates)
    for c in candidates:
        c.features["lexical"], c.features["lexical_context"] = lexical(weights, c)
    # Features the domain pack acting on a candidate's document adds (``hooks.evidence_features``): a row of
    # the lines a measure the question names is computed from, though it shares no word with it.
    needed = {id(c) for c in candidates if _pack_features(question, c).get("measure_row")}
    scored = to_read(candidates, needed)
    embed_started = time.monotonic()
    sims, part_sims = _similarities(question, parts, scored, embed, question_vector)
    embed_seconds = time.monotonic() - embed_started
    runs = _runs(scored, sims)
    bm25 = bm25_of(weights, runs)
    best = {
        "semantic": max((r.features["semantic"] for r in runs), default=0.0),
        "lexical": max((r.features["lexical"] for r in runs), default=0.0),
        "bm25": max(bm25.values(), default=0.0),
    }
    asked = asked_for(question)
    named = frozenset(sp.content_terms(question))
    by_place = {(c.number, c.index): c for c in candidates}
    model = reader.model()
    ranks = semantic_ranks(runs)
    best_of_passage = passage_best(scored)
    for r in runs:
        facts = _facts(
            r,
            by_place,
            bm25[id(r)],
            asked,
            named,
            part_sims,
            measure=any(id(m) in needed for m in (r.members or (r,))),
        )
        facts.semantic_rank = ranks[id(r)]
        facts.passage_best = any(id(m) in best_of_passage for m in (r.members or (r,)))
        facts.novelty = novelty(r.terms, named)
        facts.heading_match = heading_match(weights, r)
        r.features = reader.features(asks, facts, best)
        r.score = model.probability(r.features)
    signals = _signals(runs, candidates, weights)
    # The reader's best spans read again with the question by the cross-encoder, after the signals of whether
    # the documents answer at all: it reorders them and declines nothing.
    cross.rerank(question, sorted((c for c in runs if not c.heading), key=lambda c: c.score, reverse=True))
    chosen = _choose(runs, model, signals, candidates, similarities=embed is not None)
    for part, sims_of_part in zip(parts if len(parts) > 1 else [], part_sims, strict=False):
        chosen = _choose_for_part(part, runs, sims_of_part, asks, model, chosen)
    if asks.compare and chosen:
        chosen += _other_documents(runs, model, chosen)
    runs.sort(key=lambda c: c.score, reverse=True)
    top = [_span(c) for c in runs[:keep]]
    if not chosen:
        likeliest = next((c for c in runs if not c.heading), None)
        nearest = [_span(likeliest)] if likeliest is not None else []
        _place(nearest, question, pages, sections)
        return Evidence(
            NOT_FOUND,
            closest=_closest(sources),
            kind=kind,
            candidates=top,
            seconds=time.monotonic() - started,
            embed_seconds=embed_seconds,
            signals=signals,
            nearest=nearest,
        )
    order = joined(sorted(chosen, key=lambda c: (c.number, c.span.start)))
    spans = [_span(c) for c in order]
    _place(spans, question, pages, sections)
    return Evidence(
        ANSWERED,
        spans=spans,
        kind=kind,
        candidates=top,
        seconds=time.monotonic() - started,
        embed_seconds=embed_seconds,
        signals=signals,
    )


def _place(
    spans: list[EvidenceSpan],
    question: str,
    pages: dict[tuple[int, int], str] | None,
    sections: dict[tuple[int, int], list[tuple[int, str]]] | None,
) -> None:
    """Read each span's rows of figures as cells, and name the section it is in on its page."""
    for span in spans:
        span.cells = _cells(span, question, pages or {})
        if span.char_start >= 0:
            span.section = section_at(
                (sections or {}).get((span.doc_id, span.page_number), []), span.char_start
            )


def _signals(
    runs: list[Candidate], candidates: list[Candidate], weights: dict[str, float]
) -> dict[str, float]:
    """What says whether the documents answer at all (``reader.AnswersModel``)."""
    answers = sorted((c.score for c in runs if not c.heading), reverse=True)
    total = sum(weights.values()) or 1.0
    anywhere = set().union(*(c.terms for c in candidates))
    first = min((c.rank for c in candidates), default=0)
    in_first = set().union(*(c.terms for c in candidates if c.rank == first))
    return {
        "top": answers[0] if answers else 0.0,
        "margin": answers[0] - answers[1] if len(answers) > 1 else (answers[0] if answers else 0.0),
        "semantic_max": max((c.features["semantic"] for c in runs), default=0.0),
        "lexical_max": max((c.features["lexical"] for c in runs), default=0.0),
        "coverage": sum(w for t, w in weights.items() if t in anywhere) / total,
        "coverage_first": sum(w for t, w in weights.items() if t in in_first) / total,
        "similarity": max((passage_similarity(c) for c in candidates), default=0.0),
    }


def _similarities(
    question: str,
    parts: list[str],
    scored: list[Candidate],
    embed: Callable[[list[str]], np.ndarray] | None,
    question_vector: np.ndarray | None,
) -> tuple[dict[int, float], list[dict[int, float]]]:
    """Each read sentence's cosine similarity to the question, and to each part of a two-part question."""
    if embed is None:
        return {}, []
    asks = ([] if question_vector is not None else [question]) + (parts if len(parts) > 1 else [])
    vectors = embed(asks + [sp.flat(c.span.text) for c in scored])
    qv = question_vector if question_vector is not None else vectors[0]
    sentences = vectors[len(asks) :]
    sims = {
        id(c): float(s) for c, s in zip(scored, sentences @ np.asarray(qv, dtype=np.float32), strict=True)
    }
    part_sims = []
    if len(parts) > 1:
        for v in vectors[len(asks) - len(parts) : len(asks)]:
            part_sims.append({id(c): float(s) for c, s in zip(scored, sentences @ v, strict=True)})
    return sims, part_sims


def _runs(scored: list[Candidate], sims: dict[int, float]) -> list[Candidate]:
    """The read sentences, and runs of two or three consecutive ones of a passage (both or all read). A run
    stops where a heading, a row of figures, a footnote or a definition list's next entry (its term on a line
    of its own, ``candidates.with_terms``) begins: what follows is about something else."""
    for c in scored:
        c.features["semantic"] = sims.get(id(c), 0.0)
    by_place = {(c.number, c.index): c for c in scored}
    runs = list(scored)
    for c in scored:
        if c.heading or has_figures(c):  # a row of figures is a candidate of its own
            continue
        members = [c]
        text = str(getattr(c.source, "text", "") or "")
        for step in range(1, MAX_RUN):
            nxt = by_place.get((c.number, c.index + step))
            if (
                nxt is None
                or nxt.heading
                or has_figures(nxt)
                or _footnote(nxt)
                or _defined_term(nxt.span.text)
                or (step == 1 and heads(c, nxt))
            ):
                break
            members.append(nxt)
            span = sp.Span(c.span.start, nxt.span.end, text[c.span.start : nxt.span.end])
            terms = set().union(*(m.terms for m in members))
            run = Candidate(span, c.source, c.number, c.rank, c.index, terms, False, c.context_terms)
            run.members = tuple(members)
            run.features = {
                "semantic": max(m.features["semantic"] for m in members),
                "lexical": max(m.features["lexical"] for m in members),
                "lexical_context": c.features["lexical_context"],
            }
            runs.append(run)
    return runs


def _facts(
    c: Candidate,
    by_place: dict[tuple[int, int], Candidate],
    bm25: float,
    asked: frozenset[str],
    named: frozenset[str],
    part_sims: list[dict[int, float]],
    *,
    measure: bool,
) -> reader.SpanFacts:
    members = c.members or (c,)
    prev = by_place.get((c.number, c.index - 1))
    text = c.span.text
    entry = _defined_term(text)
    after = 0.0
    if prev is not None and (prev.heading or prev.span.ends_with_question):
        after = prev.features.get("lexical", 0.0)
    return reader.SpanFacts(
        text=text,
        sentences=len(members),
        semantic=c.features["semantic"],
        semantic_first=members[0].features.get("semantic", 0.0),
        semantic_part=max(
            (s.get(id(m), 0.0) for s in part_sims for m in members), default=c.features["semantic"]
        ),
        lexical=c.features["lexical"],
        lexical_context=c.features["lexical_context"],
        bm25=bm25,
        passage_rank=c.rank,
        passage_similarity=float(getattr(c.source, "similarity", 0.0) or 0.0),
        position=c.index,
        heading=c.heading,
        question_sentence=c.span.ends_with_question,
        after_heading_match=after,
        after_lead_in=prev is not None and prev.span.text.rstrip().endswith(":"),
        new_identifier=_new(sp.identifiers(text), asked) or entry,
        entry=entry,
        new_number=_new(sp.numbers(text), asked),
        figures_row=has_figures(c),
        row_named=bool(named) and _row_named(text, named),
        domain=1.0 if measure else 0.0,
    )


_PARTS = re.compile(
    r",?\s+(?:and|but)\s+(?=(?:how|what|which|why|when|where|who|is|are|do|does|can|should|could|would|will)\b)",
    re.IGNORECASE,
)


def question_parts(question: str) -> list[str]:
    """A question asking two things ("why …, and how …?") as its parts; otherwise the question alone."""
    parts = [p.strip() for p in _PARTS.split(question) if len(p.split()) >= 3]
    return parts if len(parts) > 1 else [question]


def _choose(
    runs: list[Candidate],
    model: reader.ReaderModel,
    signals: dict[str, float],
    candidates: list[Candidate],
    *,
    similarities: bool = True,
) -> list[Candidate]:
    """The best span if the reader finds it likely enough and the documents seem to answer at all, one nearly
    as likely beside it, and the line a colon announces or an unfinished sentence goes on with."""
    # A heading names a topic; it never answers (whatever the reader makes of its words).
    ranked = sorted((c for c in runs if not c.heading), key=lambda c: c.score, reverse=True)
    if not ranked or model.declines(signals, similarities=similarities):
        return []
    best = ranked[0]
    chosen = [best]
    for c in ranked[1:]:
        if len(chosen) >= MAX_SPANS or c.score < model.second * best.score:
            break
        if c.heading or any(_overlaps(c, o) or _within(c, o) for o in chosen):
            continue
        if best.features.get("domain") and not c.features.get("domain"):
            continue  # the figures a measure is computed from answer it; a sentence beside them does not
        wider = [i for i, o in enumerate(chosen) if _within(o, c)]
        if wider:  # a quote's sentence, finished from the next page in another passage: quoted once, whole
            chosen[wider[0]] = c
            best = chosen[0]
            continue
        chosen.append(c)
    out = chosen + _continuation(best, candidates, chosen)
    for c in chosen[1:]:  # a span beside the best that announces a list or stops mid-sentence comes with it
        out += _continuation(c, candidates, out)
    return out


def _choose_for_part(
    part: str,
    runs: list[Candidate],
    sims: dict[int, float],
    asks: reader.Asks,
    model: reader.ReaderModel,
    chosen: list[Candidate],
) -> list[Candidate]:
    """Adds the best span for one part of a two-part question when the answer lacks one."""
    if len(chosen) >= MAX_SPANS + 1:
        return chosen
    weights = term_weights(question_terms(part), runs)
    part_asks = reader.Asks.of(part)

    def part_score(c: Candidate) -> float:
        members = c.members or (c,)
        own, around = lexical(weights, c)
        f = dict(c.features)
        f["semantic"] = max(sims.get(id(m), 0.0) for m in members)
        f["lexical"], f["lexical_context"] = own, around
        if part_asks != asks:
            for name in ("number_asked", "identifier_asked", "list_asked", "yesno_asked", "reason_asked"):
                f[name] = 0.0
        return model.probability(f)

    answers = [c for c in runs if not c.heading and not any(_overlaps(c, o) for o in chosen)]
    if not answers:
        return chosen
    scores = {id(c): part_score(c) for c in answers}
    top = max(answers, key=lambda c: scores[id(c)])
    # A part is a narrower question than the reader was fitted on, and its best span is read against the part
    # alone: it needs ``PART_SHARE`` of the threshold.
    bar = model.threshold * PART_SHARE
    if scores[id(top)] < bar:
        return chosen
    return [*chosen, top]


def _other_documents(
    runs: list[Candidate], model: reader.ReaderModel, chosen: list[Candidate]
) -> list[Candidate]:
    """For a question that sets things side by side, the best span of each other document read (at most
    ``MAX_SPANS`` of them), when the reader finds it likely enough for one side of the question
    (``PART_SHARE`` of the threshold): each side is answered from its own document."""
    docs = {_doc(c) for c in chosen}
    best: dict[Any, Candidate] = {}
    for c in runs:
        d = _doc(c)
        if c.heading or d in docs or c.score < model.threshold * PART_SHARE:
            continue
        if d not in best or c.score > best[d].score:
            best[d] = c
    return sorted(best.values(), key=lambda c: c.score, reverse=True)[:MAX_SPANS]


def _doc(c: Candidate) -> Any:
    return getattr(c.source, "doc_id", None) or getattr(c.source, "path", None)


def _pack_features(question: str, c: Candidate) -> dict[str, float]:
    return hooks.evidence_features(question, c.span.text, str(getattr(c.source, "domain", "") or ""))


def _row_named(text: str, named: frozenset[str]) -> bool:
    """Whether ``text`` holds a row of figures whose label's words the question all names."""
    for line in text.split("\n"):
        row = split_row(line) if is_figures_row(line) else None
        if row is None:
            continue
        label = set(sp.content_terms(row[0]))
        if label and label <= named:
            return True
    return False


def _new(found: list[str], asked: frozenset[str]) -> bool:
    return any(x.lower() not in asked for x in found)


def _defined_term(text: str) -> bool:
    """Whether ``text`` is a definition list's entry (a term line, then what it means)."""
    lines = text.splitlines()
    return len(lines) > 1 and is_term(lines[0])


def asked_for(question: str) -> frozenset[str]:
    return frozenset(x.lower() for x in sp.identifiers(question) + sp.numbers(question))


def _continuation(best: Candidate, candidates: list[Candidate], chosen: list[Candidate]) -> list[Candidate]:
    """What a lead-in announces belongs to it: the line after a span that ends with a colon ("Use the
    following command:"), stops before its sentence ends ("… return the tree to its last state with") or is
    a label on a line of its own ("Date of next meeting"), and
    when that line is a list's item, the items after it (``MAX_ITEMS`` at most) —
    and the rest of a list a span starts after its lead-in. Taken from every sentence of the passage, read by
    the embedding model or not."""
    by_place = {(c.number, c.index): c for c in candidates if not c.members}
    last = by_place.get((best.number, best.last))
    lines = best.span.text.rstrip().splitlines()
    opened = (
        best.span.text.rstrip().endswith(":")
        or sp.unfinished(best.span.text)
        or bool(LABEL.fullmatch(best.span.text.strip()))
    )
    listing = any(ln.rstrip().endswith(":") for ln in lines[:-1]) and last is not None and _is_item(last)
    if not opened and not listing:
        return []
    out: list[Candidate] = []
    index = best.last + 1
    while len(out) < MAX_ITEMS:
        nxt = by_place.get((best.number, index))
        if nxt is None or nxt.heading or (out and not _is_item(nxt)) or (listing and not _is_item(nxt)):
            break
        if _footnote(nxt):
            break  # the page's body ends here: what a footnote says does not finish its sentence
        if nxt not in chosen:
            out.append(nxt)
        if not _is_item(nxt):
            break
        index += 1
    return out


def _footnote(c: Candidate) -> bool:
    """Whether a sentence of a PDF passage opens one of its page's footnotes."""
    src = c.source
    if getattr(src, "doc_type", "") != "pdf":
        return False
    return sp.opens_footnote(str(getattr(src, "text", "") or ""), c.span.start)


def _is_item(c: Candidate) -> bool:
    return bool(sp.LIST_ITEM.match(c.span.text))


def _overlaps(a: Candidate, b: Candidate) -> bool:
    if a.source is b.source:
        return a.span.start < b.span.end and b.span.start < a.span.end
    return sp.flat(a.span.text) == sp.flat(b.span.text)


def _within(a: Candidate, b: Candidate) -> bool:
    """Whether ``a``, from another passage, is a part of ``b`` (the page before's last sentence, cut where
    its page ends, and the same sentence finished in the passage at the top of the next page)."""
    return a.source is not b.source and sp.flat(a.span.text) in sp.flat(b.span.text)


def _span(c: Candidate) -> EvidenceSpan:
    src = c.source
    start = int(getattr(src, "char_start", 0) or 0)
    end = int(getattr(src, "char_end", 0) or 0)
    text = str(getattr(src, "text", "") or "")
    # A whole passage (``pages.WholePassage``) carries ``before``/``after`` characters from the pages around.
    before, after = int(getattr(src, "before", 0)), int(getattr(src, "after", 0))
    exact = (
        end - start >= len(text) - before - after
    )  # a passage cut to its leading sentences starts where it did
    base = start - before
    return EvidenceSpan(
        text=c.span.text,
        number=c.number,
        doc_id=int(getattr(src, "doc_id", 0) or 0),
        title=str(getattr(src, "title", "") or ""),
        path=str(getattr(src, "path", "") or ""),
        page_number=int(getattr(src, "page_number", 1) or 1),
        char_start=min(max(base + c.span.start, start), end) if exact else -1,
        char_end=min(max(base + c.span.end, start), end) if exact else -1,
        score=c.score,
        features=dict(c.features),
        domain=str(getattr(src, "domain", "") or ""),
        page_label=str(getattr(src, "page_label", "") or ""),
    )


def _cells(span: EvidenceSpan, question: str, pages: dict[tuple[int, int], str]) -> list[dict[str, Any]]:
    """Quoted rows of figures as cells under the column headings found above them on their page (all the
    span's lines, or none)."""
    page = pages.get((span.doc_id, span.page_number), "")
    lines = [(m.start(), m.group(0)) for m in re.finditer(r"[^\n]+", span.text) if m.group(0).strip()]
    if not page or not lines or not all(is_figures_row(line) for _, line in lines):
        return []
    rows = []
    for offset, line in lines:
        exact = span.char_start >= 0 and page[span.char_start + offset :].startswith(line)
        start = span.char_start + offset if exact else page.find(line)
        headings = hooks.column_headings(span.domain)
        found = cells_of(line, page, start, question, headings) if start >= 0 else None
        if found is None:
            return []
        rows.append(found.to_dict())
    return rows


def _closest(sources: Sequence[Any]) -> list[int]:
    return list(range(1, min(3, len(sources)) + 1))
