"""The answer benchmark's dataset and measures (the run itself is a command: ``local-rag eval answers``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from localrag.eval.answers import (
    dataset_documents,
    half_questions,
    load_questions,
    score_answer,
    token_f1,
)

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
    assert token_f1("a signiﬁcant eﬀect [2]", "a significant effect") == 1.0  # a quote keeps its ligatures


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


EVERYDAY = Path(__file__).resolve().parents[1] / "datasets" / "everyday"


def test_the_everyday_dataset_is_split_by_document_and_covers_every_kind():
    import json

    questions = load_questions(EVERYDAY)
    assert len(questions) >= 320
    kinds = Counter(q.kind for q in questions)
    assert set(kinds) >= {"factual", "setting", "procedural", "list", "numeric", "yesno", "multi", "compare"}
    assert {"document", "none"} <= set(kinds)
    assert kinds["none"] >= 0.08 * len(questions)
    assert len({q.id for q in questions}) == len(questions)
    split = json.loads((EVERYDAY / "split.json").read_text(encoding="utf-8"))
    assert not set(split["tune"]) & set(split["test"])
    tune, test = (half_questions(EVERYDAY, questions, h) for h in ("tune", "test"))
    assert len(tune) + len(test) == len(questions)  # every question, compare ones too, lies in one half
    for half in (tune, test):
        assert len(half) >= 0.4 * len(questions)
        assert {q.file.rsplit(".", 1)[1] for q in half} >= {"pdf", "html", "md", "docx"}
    for q in questions:
        if q.kind == "none":
            assert q.answer == "" and q.page == 0
        else:
            assert q.answer and q.evidence and q.page >= 1
        if q.kind == "compare":
            assert len(q.files) == len(q.pages) >= 2


def _found(q, answer="", spans=(), generated=()):
    status = "answered" if spans else "not_found"
    return {
        "answer": answer,
        "sources": [dict(s, cited=True) for s in spans],
        "parts": {"evidence": {"status": status, "spans": list(spans)}, "generated": list(generated)},
        "timings": {},
    }


def test_a_question_the_documents_do_not_answer_is_right_only_when_declined():
    q = next(q for q in load_questions(EVERYDAY) if q.kind == "none")
    not_found = _found(q, "Your documents do not seem to answer this. The closest passages are listed below.")
    assert score_answer(q, not_found, "evidence")["correct_and_cited"]
    span = {"path": "/d/bashref.pdf", "page_number": 91, "text": "A value of ignoreboth ..."}
    quoted = _found(q, "A value of ignoreboth ... [1]", spans=[span])
    assert not score_answer(q, quoted, "evidence")["correct_and_cited"]
    said = {"text": "Use the -x flag.", "supported": True, "shown": True}
    confident = _found(q, "Use the -x flag. [2]", generated=[said])
    assert not score_answer(q, confident, "default")["correct_and_cited"]
    model_declines = _found(q, "I could not find this in your documents.", generated=[])
    assert score_answer(q, model_declines, "generated")["correct_and_cited"]
    assert not score_answer(q, {"error": "no model"}, "default")["correct_and_cited"]


def test_a_compare_question_counts_a_citation_of_any_of_its_pages():
    q = next(q for q in load_questions(EVERYDAY) if q.kind == "compare")
    second = {"path": f"/docs/{q.files[1]}", "page_number": q.pages[1], "cited": True}
    result = _found(q, q.evidence + " [1]", spans=[second])
    row = score_answer(q, result, "evidence")
    assert row["gold_page_cited"] and row["correct_and_cited"]
    elsewhere = _found(q, q.evidence + " [1]", spans=[{**second, "page_number": q.pages[1] + 7}])
    assert not score_answer(q, elsewhere, "evidence")["gold_page_cited"]


def test_a_dataset_of_several_document_types_is_read_from_docs(tmp_path):
    (tmp_path / "docs").mkdir()
    for name in ("a.pdf", "b.docx", "c.md", "d.html", "notes.xyz"):
        (tmp_path / "docs" / name).write_bytes(b"x")
    assert [p.name for p in dataset_documents(tmp_path)] == ["a.pdf", "b.docx", "c.md", "d.html"]
    (tmp_path / "pdfs").mkdir()
    (tmp_path / "pdfs" / "old.pdf").write_bytes(b"x")
    assert [p.name for p in dataset_documents(tmp_path)] == ["a.pdf", "b.docx", "c.md", "d.html"]
    assert [p.name for p in dataset_documents(DATASET)] == sorted(p.name for p in dataset_documents(DATASET))


def test_page_hit_questions_of_one_half_have_pages_and_their_evidence():
    """``eval DIR --split``: a half's questions for page hit@k, without those the documents do not answer; a
    compare question's pages are those of its two documents; span@k finds the evidence in a passage."""
    from localrag.core.checks.questions import first_hit
    from localrag.eval import pagehit

    everything = [q for q in load_questions(EVERYDAY) if q.kind != "none"]
    tune, test = (pagehit.load_questions(EVERYDAY, h) for h in ("tune", "test"))
    assert len(tune) + len(test) == len(everything)
    assert not {q.label for q in tune} & {q.label for q in test}
    compare = next(q for q in test if q.files)
    assert compare.targets() == set(zip(compare.files, compare.pages, strict=True))
    assert first_hit([("other.pdf", 1), (compare.files[1], compare.pages[1])], compare.targets()) == 2
    q = next(q for q in tune if q.evidence.count(". ") >= 1)
    first = q.evidence.split(". ")[0]
    target = next(iter(q.targets()))
    passage = f"Something else entirely.\n{first.upper()}\nand more"
    passages = [("x.pdf", 1, passage), (*target, "unrelated words here"), (*target, passage)]
    assert pagehit.first_span(passages, q) == 3
