"""Evaluation on a tiny BEIR folder with known answers, through its own throw-away database; and the
metrics."""

from __future__ import annotations

import json
import math

import pytest

from localrag.eval import metrics

CORPUS = [
    ("d1", "Volcanoes", "Lava flows from a volcano when magma reaches the surface during an eruption."),
    ("d2", "Penguins", "Emperor penguins breed in Antarctica during the harsh winter months."),
    ("d3", "Tides", "Ocean tides are caused by the gravitational pull of the moon and the sun."),
    ("d4", "Photosynthesis", "Plants convert sunlight, water and carbon dioxide into sugar and oxygen."),
    ("d5", "Vaccines", "Vaccines train the immune system to recognise a virus before an infection."),
    ("d6", "", "Bread rises because yeast ferments sugar and releases carbon dioxide gas."),
]
QUERIES = {
    "q1": ("What causes ocean tides?", {"d3": 1}),
    "q2": ("Where do emperor penguins breed?", {"d2": 1}),
    "q3": ("how do vaccines protect against a virus infection", {"d5": 1}),
    "q4": ("carbon dioxide", {"d4": 1, "d6": 1}),
}


@pytest.fixture()
def beir_folder(tmp_path):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS), encoding="utf-8"
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _) in QUERIES.items())
        + json.dumps({"_id": "unjudged", "text": "never asked"})
        + "\n",
        encoding="utf-8",
    )
    rows = ["query-id\tcorpus-id\tscore"] + [
        f"{q}\t{d}\t{g}" for q, (_, rel) in QUERIES.items() for d, g in rel.items()
    ]
    (folder / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def test_eval_on_a_tiny_beir_folder(beir_folder, embedder, tmp_path):
    from localrag.eval.beir import evaluate, load_dataset

    ds = load_dataset(beir_folder, "test")
    assert set(ds.queries) == set(QUERIES) and ds.qrels["q4"] == {"d4": 1, "d6": 1}
    report = evaluate(beir_folder, split="test", embedder=embedder, cache_dir=tmp_path / "cache")
    assert report["dataset"] == "tiny" and report["split"] == "test" and report["queries"] == 4
    assert report["documents"] == 6 and report["chunks"] == 6
    assert set(report["modes"]) == {"hybrid", "vector", "keyword"}
    for mode, got in report["modes"].items():
        assert set(got) == {"ndcg@10", "recall@10", "recall@100", "mrr@10", "latency_ms"}
        assert got["mrr@10"] == 1.0, mode  # every query's first answer is right
        assert got["recall@10"] == got["recall@100"] == 1.0, mode
        assert got["ndcg@10"] == 1.0, mode
        assert 0 < got["latency_ms"]["p50"] <= got["latency_ms"]["p95"]
    # The second run reads the corpus vectors from the cache.
    assert any((tmp_path / "cache").glob("*.npy"))


def test_eval_cli_prints_one_json_object(beir_folder, embedder, tmp_path, capsys, monkeypatch):
    from localrag.cli import run_cli

    monkeypatch.setenv("LOCALRAG_EVAL_CACHE", str(tmp_path / "cache"))
    assert run_cli(["eval", str(beir_folder), "--mode", "keyword", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dataset"] == "tiny" and out["split"] == "test"
    assert list(out["modes"]) == ["keyword"] and out["modes"]["keyword"]["ndcg@10"] == 1.0


def test_metrics_match_hand_computed_values():
    rel = {"a": 1, "b": 1}
    assert metrics.ndcg_at(["a", "b", "c"], rel) == 1.0
    assert metrics.ndcg_at(["x", "a"], rel) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert metrics.recall_at(["x", "a"], rel, 10) == 0.5
    assert metrics.recall_at(["x", "a"], rel, 1) == 0.0
    assert metrics.mrr_at(["x", "y", "b"], rel) == pytest.approx(1 / 3)
    assert metrics.mrr_at(["x"] * 10 + ["a"], rel) == 0.0
    summary = metrics.summarize({"q1": ["a"], "q2": []}, {"q1": {"a": 1}, "q2": {"z": 1}})
    assert summary == {"ndcg@10": 0.5, "recall@10": 0.5, "recall@100": 0.5, "mrr@10": 0.5}
    assert metrics.percentiles([1.0, 2.0, 3.0, 4.0]) == {"p50": 2.5, "p95": 3.85}


def test_bench_retrieval_searches_pieces_routes_named_questions_and_serves_queries_in_their_lane(
    beir_folder, embedder, tmp_path
):
    from localrag.eval.bench_retrieval import bench

    report = bench(
        60, queries=2, corpus=beir_folder, ingest_queries=2, cache_dir=tmp_path / "cache", embedder=embedder
    )
    assert report["chunks"] == 60 and report["synthetic_chunks"] == 54
    # Every chunk has its pieces, real and synthetic ones alike.
    assert report["pieces"] >= report["chunks"]
    # A question naming its document's file is routed to it alone, as the app routes it.
    assert report["routed_queries"] == 2 and report["routing"] == {"only": 2}
    # During the ingest, queries are embedded in their own session, not between ingestion slices.
    assert report["while_ingesting"]["query_lane"] is True


def test_a_kept_store_whose_load_was_interrupted_is_loaded_again_then_reused(beir_folder, embedder, tmp_path):
    """A load stopped part way (rows written, the store not yet marked as loaded) is emptied and loaded again
    instead of failing on the rows it left; the next run reuses the store."""
    from localrag.core.store import db
    from localrag.eval import beir
    from localrag.eval.bench_retrieval import bench

    store = tmp_path / "store"
    with beir.kept_store(store) as conninfo, db.connect(conninfo) as conn:
        conn.execute(
            "INSERT INTO documents (path, title, doc_type, sha256, status) "
            "VALUES ('/bench/doc1.pdf', 'Doc 1', 'pdf', 'x', 'ready')"
        )
        conn.commit()
    cache = tmp_path / "cache"
    first = bench(
        60, queries=2, corpus=beir_folder, with_ingest=False, cache_dir=cache, embedder=embedder, store=store
    )
    assert first["chunks"] == 60 and first["documents"] == 60 // 25 + 1 and "load_s" in first
    again = bench(
        60, queries=2, corpus=beir_folder, with_ingest=False, cache_dir=cache, embedder=embedder, store=store
    )
    assert "load_s" not in again and again["pieces"] == first["pieces"]


def test_a_corpus_changed_in_one_text_embeds_only_that_text_again(embedder, tmp_path):
    from localrag.eval import beir

    class Counting:  # the real model, counting the texts it is asked to embed
        def __init__(self, inner):
            self.inner, self.texts = inner, 0

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def embed(self, texts):
            self.texts += len(texts)
            return self.inner.embed(texts)

    first = [text for _, _, text in CORPUS]
    changed = [*first[:-1], "Sourdough rises slowly because wild yeast ferments the flour."]
    counting = Counting(embedder)
    beir.embed_cached(counting, first, tmp_path)
    vectors = beir.embed_cached(counting, changed, tmp_path)
    assert counting.texts == len(first) + 1
    assert vectors == pytest.approx(embedder.embed(changed), abs=1e-5)
    again = beir.embed_cached(counting, changed, tmp_path)
    assert counting.texts == len(first) + 1 and again == pytest.approx(vectors)
