"""The cross-encoder that reads the question with the reader's best spans (``core/answer/cross``), with the
model file the app ships."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from localrag.core.answer import cross

WARRANTY = "How long is the guarantee on the machine?"
ANSWER = "Every machine is guaranteed for two years from the day it was bought, parts and labour included."
OTHERS = [
    "The guarantee card is in the box with the machine.",
    "Our shop is open from nine in the morning until six in the evening.",
    "Machines bought before 2019 were sold with a different power cable.",
]


def _span(text: str, score: float) -> SimpleNamespace:
    return SimpleNamespace(span=SimpleNamespace(text=text), score=score, features={})


def test_the_shipped_model_scores_the_answering_sentence_above_those_that_only_share_its_words() -> None:
    model = cross.shared()
    assert model is not None, "resources/reader/cross_encoder.onnx should ship with the app"
    scores = model.scores(WARRANTY, [ANSWER, *OTHERS])
    assert scores.shape == (4,)
    assert int(scores.argmax()) == 0, scores


def test_each_span_keeps_its_own_score_however_the_spans_are_run_together() -> None:
    model = cross.shared()
    assert model is not None
    texts = [
        ANSWER,
        *OTHERS,
        "Yes.",
        ANSWER + " " + OTHERS[0] + " " + OTHERS[1],
        OTHERS[2],
        "No refunds.",
        "x",
    ]
    assert len(texts) > cross.THREADS  # threads read several pairs each, of different lengths
    together = model.scores(WARRANTY, texts)
    alone = [float(model.scores(WARRANTY, [t])[0]) for t in texts]
    assert together == pytest.approx(alone, abs=1e-4)


def test_a_question_longer_than_the_models_input_is_read_too() -> None:
    model = cross.shared()
    assert model is not None
    long_question = "My machine, bought in spring, " * 60 + WARRANTY
    scores = model.scores(long_question, [ANSWER, *OTHERS])
    assert scores.shape == (4,) and all(s == s for s in scores)  # four numbers, none NaN


def test_a_close_call_goes_to_the_span_it_reads_as_the_answer_and_only_the_best_few_are_read() -> None:
    ranked = [_span(OTHERS[0], 0.38), _span(ANSWER, 0.36), _span(OTHERS[1], 0.20), _span(OTHERS[2], 0.10)]
    assert cross.rerank(WARRANTY, ranked)
    assert max(ranked, key=lambda c: c.score).span.text == ANSWER
    assert all("cross" in c.features for c in ranked)
    # Only the reader's best few are read: a span after them keeps its probability and has no score.
    more = [_span(f"Sentence {i} about something else.", 0.05) for i in range(cross.RERANK)]
    assert cross.rerank(WARRANTY, ranked + more)
    unread = more[cross.RERANK - len(ranked) :]
    assert unread and all(c.score == 0.05 and "cross" not in c.features for c in unread)


class _Failing:
    """A stand-in that fails (fault injection): the model's run raising inside an answer."""

    def scores(self, question: str, texts: list[str]) -> None:
        raise RuntimeError("onnxruntime failed")


def test_a_failing_model_leaves_the_readers_order_and_probabilities() -> None:
    ranked = [_span(OTHERS[0], 0.40), _span(ANSWER, 0.36)]
    assert not cross.rerank(WARRANTY, ranked, model=_Failing())  # type: ignore[arg-type]
    assert [c.score for c in ranked] == [0.40, 0.36]
    assert all(not c.features for c in ranked)


class _FailingSession:
    """A stand-in for onnxruntime's session that fails on one pair (fault injection): a run inside one of the
    model's threads raising."""

    def __init__(self, session: object) -> None:
        self.session, self.calls = session, itertools.count(1)  # next() of a count is atomic

    def run(self, outputs: None, feeds: dict) -> list:
        if next(self.calls) == 3:
            raise RuntimeError("onnxruntime failed")
        return self.session.run(outputs, feeds)  # type: ignore[attr-defined]


def test_a_pair_failing_in_one_of_the_models_threads_leaves_the_readers_order() -> None:
    from localrag.core.embed.model_files import default_embedding_files

    model = cross.CrossEncoder(cross.model_file(), default_embedding_files().tokenizer)
    model.session = _FailingSession(model.session)
    ranked = [_span(OTHERS[0], 0.38), _span(ANSWER, 0.36), _span(OTHERS[1], 0.20), _span(OTHERS[2], 0.10)]
    assert not cross.rerank(WARRANTY, ranked, model=model)
    assert [c.score for c in ranked] == [0.38, 0.36, 0.20, 0.10]
    assert all("cross" not in c.features for c in ranked)
    # The next question is read as usual.
    assert cross.rerank(WARRANTY, ranked, model=model)
    assert max(ranked, key=lambda c: c.score).span.text == ANSWER


def test_without_its_file_the_reader_answers_alone(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cross, "model_file", lambda: tmp_path / "missing.onnx")
    cross._shared.cache_clear()
    try:
        assert cross.shared() is None
        ranked = [_span(OTHERS[0], 0.40), _span(ANSWER, 0.36)]
        assert not cross.rerank(WARRANTY, ranked)
        assert [c.score for c in ranked] == [0.40, 0.36]
    finally:
        cross._shared.cache_clear()
