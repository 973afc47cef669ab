"""The answer benchmark's dataset and measures (the run itself is a command: ``local-rag eval answers``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from localrag.eval.answers import load_questions, score_answer, token_f1

DATASET = Path(__file__).resolve().parents[1] / "datasets" / "debian-manuals"


def test_the_dataset_has_enough_questions_of_every_kind():
    questions = load_questions(DATASET)
    assert len(questions) >= 80
    kinds = Counter(q.kind for q in questions)
    assert set(kinds) == {"factual", "numeric", "procedural", "setting", "yesno", "document"}
    assert min(kinds.values()) >= 8
    assert len({q.id for q in questions}) == len(questions)
    for q in questions:
        assert q.file.endswith(".pdf") and q.page >= 1 and q.answer and q.evidence
        if q.kind == "document":
            assert q.sections and len(q.sections) == len(q.section_pages)


def test_token_f1_counts_content_words_only():
    assert token_f1("Use the all.equal function [1].", "the all.equal function") == 1.0  # [1] is no word
    assert token_f1("R_LIBS_USER", "The variable R_LIBS_USER") == token_f1(
        "R_LIBS_USER", "variable R_LIBS_USER"
    )
    assert token_f1("tomatoes", "R_LIBS_USER") == 0.0
    assert 0.0 < token_f1("set logscale y 2", "set logscale y") < 1.0


def test_correct_and_cited_needs_the_words_and_the_page():
    q = next(q for q in load_questions(DATASET) if q.kind != "document")
    source = {"path": f"/docs/{q.file}", "page_number": q.page, "cited": True}
    right = {
        "answer": q.evidence + " [1]",
        "sources": [source],
        "parts": {"evidence": {"spans": [source]}},
        "timings": {},
    }
    assert score_answer(q, right, "evidence")["correct_and_cited"]
    wrong_page = {
        **right,
        "sources": [{**source, "page_number": q.page + 1}],
        "parts": {"evidence": {"spans": [{**source, "page_number": q.page + 1}]}},
    }
    assert not score_answer(q, wrong_page, "evidence")["correct_and_cited"]
    wrong_words = {**right, "answer": "Something else entirely [1]"}
    assert not score_answer(q, wrong_words, "evidence")["correct_and_cited"]
