"""The reader: features of candidate spans, the shipped logistic model, and the fitting's measure."""

from __future__ import annotations

import json
import math

from localrag.core.answer import reader
from localrag.core.answer.reader import Asks, ReaderModel, SpanFacts
from localrag.eval.reader_fit import simulate


def _facts(text: str, **kw) -> SpanFacts:
    base = {
        "text": text,
        "sentences": 1,
        "semantic": 0.5,
        "semantic_first": 0.5,
        "semantic_part": 0.5,
        "lexical": 0.5,
        "lexical_context": 0.5,
        "bm25": 1.0,
        "passage_rank": 0,
        "passage_similarity": 0.5,
        "position": 0,
        "heading": False,
        "question_sentence": False,
        "after_heading_match": 0.0,
        "after_lead_in": False,
        "new_identifier": False,
        "new_number": False,
        "figures_row": False,
        "row_named": False,
    }
    base.update(kw)
    return SpanFacts(**base)


def test_what_a_question_asks_for():
    assert Asks.of("Which environment variable sets my library?").kind == "identifier"
    assert Asks.of("How much slower is the shared-library build?").number
    assert Asks.of("Which libraries does it try, and in what order?").listing
    assert Asks.of("Can I run two servers on one machine?").yesno
    assert Asks.of("Why do my plots come out empty?").why
    assert Asks.of("How do I stop it from printing colours?").how
    assert Asks.of("Tell me about glaciers").kind == ""


def test_features_say_what_a_span_carries():
    best = {"semantic": 0.8, "lexical": 0.5, "bm25": 2.0}
    lead = reader.features(Asks.of("How do I install it?"), _facts("Install it as follows:"), best)
    assert lead["lead_in"] == 1.0 and math.isclose(lead["semantic_gap"], -0.3)
    listed = reader.features(
        Asks.of("Which formats are supported?"), _facts("- PDF\n- Markdown\n- Word files", sentences=3), best
    )
    assert listed["list_asked"] == 1.0 and listed["three_sentences"] == 1.0
    number = reader.features(
        Asks.of("How much slower is it?"), _facts("It is about 10% slower.", new_number=True), best
    )
    assert number["number_asked"] == 1.0 and number["number_unasked"] == 0.0
    reason = reader.features(
        Asks.of("Why is it slow?"), _facts("It is slow because it checks every page."), best
    )
    assert reason["reason_asked"] == 1.0


def test_the_shipped_model_reads_the_features_the_app_makes():
    m = reader.model()
    feats = reader.features(Asks.of("How do I install it?"), _facts("Run make install."), {"bm25": 1.0})
    assert set(m.names) <= set(feats)
    assert 0.0 < m.probability(feats) < 1.0
    assert 0.0 < m.threshold < 1.0
    added = sum(w for _, w in m.contributions(feats))
    assert math.isclose(m.probability(feats), 1 / (1 + math.exp(-(m.intercept + added))), rel_tol=1e-9)
    assert ReaderModel.from_json(m.to_json()).probability(feats) == m.probability(feats)


def _row(kind: str, labels: list[bool], semantics: list[float]) -> dict:
    return {
        "id": "doc-1",
        "dataset": "d",
        "kind": kind,
        "answer": "forty two" if kind != "none" else "",
        "evidence": "The answer is forty two.",
        "file": "a.pdf",
        "page": 3,
        "candidates": [
            {
                "text": "The answer is forty two." if label else "Something else entirely here.",
                "path": "a.pdf",
                "page": 3 if label else 4,
                "start": 10 * i,
                "features": {"semantic": s},
                "label": label,
            }
            for i, (label, s) in enumerate(zip(labels, semantics, strict=True))
        ],
    }


def test_the_measure_counts_the_best_span_and_silence_on_questions_the_documents_do_not_answer():
    m = ReaderModel(("semantic",), (10.0,), (0.0,), (1.0,), -5.0, threshold=0.5, second=1.01)
    rows = [
        _row("factual", [False, True], [0.2, 0.9]),  # the answer is the most likely span: right
        _row("factual", [True, False], [0.2, 0.9]),  # another span is more likely: wrong
        _row("none", [False], [0.1]),  # nothing likely enough, nothing quoted: right
        _row("none", [False], [0.9]),  # something quoted where the documents do not answer: wrong
    ]
    assert simulate(rows, m)["correct_and_cited"] == 0.5


def test_the_answers_signal_declines_where_the_best_span_alone_would_be_quoted():
    gate = reader.AnswersModel(("coverage",), (10.0,), -5.0, threshold=0.5)
    m = ReaderModel(("semantic",), (10.0,), (0.0,), (1.0,), -5.0, threshold=0.5, second=1.01, answers=gate)
    likely = {"top": 0.9, "margin": 0.5}
    assert not m.declines({**likely, "coverage": 0.9})  # the passages hold the question's words
    assert m.declines({**likely, "coverage": 0.1})  # they do not: nothing is quoted, however likely the span
    assert m.declines({"top": 0.2, "coverage": 0.9})  # the reader's own threshold still applies
    assert ReaderModel.from_json(m.to_json()).answers == gate
    # the measure counts a declined question the documents do not answer as right
    row = _row("none", [False], [0.9])
    row["signals"] = {"coverage": 0.1}
    assert simulate([row], m)["none_declined"] == 1.0


def test_the_language_models_likelihood_of_the_question_prefers_the_span_that_answers_it(tmp_path):
    # The bundled GGUF, run for real: the question is likelier after the sentence that answers it than after
    # sentences about something else, and a strong enough weight lets it overtake the reader's pick.
    from localrag.core.embed.model_files import default_gguf
    from localrag.eval.reader_fit import likelihood_report, question_likelihoods

    texts = [
        "The kitchen is open from nine in the morning until late evening on weekdays.",
        "To stop the printer from pausing between pages, turn off the duplex delay in the printer settings.",
        "Our staff wear blue uniforms and name badges at all times.",
        "Parking is free for customers during the weekend.",
    ]
    row = {
        "id": "q1",
        "kind": "procedural",
        "question": "My printer keeps pausing between pages. How do I stop it?",
        "answer": "turn off the duplex delay in the printer settings",
        "evidence": texts[1],
        "file": "a.pdf",
        "page": 1,
        # the passages hold the question's words: the documents answer
        "signals": {
            "coverage": 1.0,
            "coverage_first": 1.0,
            "semantic_max": 0.9,
            "lexical_max": 1.0,
            "similarity": 0.9,
        },
        "candidates": [
            {
                "text": t,
                "path": "a.pdf",
                "page": 1,
                "number": 1,
                "start": 100 * i,
                "label": i == 1,
                "features": {"semantic": 0.9 if i == 0 else 0.5},
            }
            for i, t in enumerate(texts)
        ],
    }
    out = tmp_path / "lm.jsonl"
    assert question_likelihoods([row], default_gguf(), out, say=lambda _: None) == 1
    scores = json.loads(out.read_text())["scores"]
    assert max(scores, key=scores.get) == "1"
    by_alpha = likelihood_report([row], out, alphas=(0.0, 100.0))["by_alpha"]
    assert by_alpha["0.0"]["correct_and_cited"] == 0.0  # the shipped reader alone takes the first span
    assert by_alpha["100.0"]["correct_and_cited"] == 1.0


def test_the_measure_quotes_a_second_span_only_where_the_rule_allows_it():
    m = ReaderModel(("semantic",), (10.0,), (0.0,), (1.0,), -5.0, threshold=0.5, second=0.8)
    row = _row("factual", [True, False], [0.9, 0.85])
    unrelated = " ".join(["Some other setting changes the colour of every plot drawn on screen."] * 2)
    row["candidates"][1].update(text=unrelated, page=4, start=0)
    # Quoted beside the answer, the unrelated span pulls the quote's F1 under the cut-off.
    assert simulate([row], m)["correct_and_cited"] == 0.0
    assert simulate([row], m)["second_quoted"] == 1.0
    kept_out = simulate([row], m, beside="page")
    assert (kept_out["correct_and_cited"], kept_out["second_quoted"]) == (1.0, 0.0)
    # The sentence right after the answer on its page continues it: "adjacent" quotes it.
    row["candidates"][1].update(
        text="It was found in 1979.", page=3, start=len("The answer is forty two.") + 1
    )
    assert simulate([row], m, beside="adjacent")["second_quoted"] == 1.0
    assert simulate([row], m, beside="list")["second_quoted"] == 0.0  # the question asks for no list
