"""Hybrid retrieval against the real store and model: modes, filters, merging, dedupe, mismatch and
failure."""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import numpy as np
import pytest

from localrag.core.config import Settings
from localrag.core.progress import Cancelled, CancelToken
from localrag.core.retrieve import bm25, retrieve
from localrag.core.retrieve.retriever import Tuning
from localrag.core.store import models

INSTALL = [
    "To install Local RAG on Linux, download the package for your distribution.",
    "Then run the installer from a terminal and follow the prompts to finish the Linux setup.",
    "After installing, start the program from the applications menu or by typing local-rag.",
]


def add_document(
    conn,
    embedder,
    chunks: list[str],
    *,
    title: str,
    path: str,
    doc_type: str = "text",
    pages: list[int] | None = None,
    heading: str = "",
    created: dt.datetime | None = None,
    model: str | None = None,
    status: str = "ready",
    overlap: int = 0,
) -> tuple[int, list[int]]:
    """A ready document written straight into the store (chunks, vectors, BM25), as the ingestion leaves it.

    Chunks of one page are laid end to end on that page; ``overlap`` characters of each chunk repeat the end
    of the one before, the way the chunker overlaps them.
    """
    doc = conn.execute(
        "INSERT INTO documents (path, title, doc_type, sha256, status, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
        (
            path,
            title,
            doc_type,
            hashlib.sha256((path + "".join(chunks)).encode()).hexdigest(),
            status,
            created or dt.datetime.now(dt.timezone.utc),
        ),
    ).fetchone()[0]
    pages = pages or [1] * len(chunks)
    ids, pos, last_page = [], 0, None
    for i, (text, page) in enumerate(zip(chunks, pages, strict=True)):
        if page != last_page:
            pos, last_page = 0, page
        start = max(0, pos - overlap) if i and pages[i - 1] == page else pos
        cid = conn.execute(
            "INSERT INTO document_chunks (doc_id, chunk_index, page_number, heading_path, text, token_count, "
            "char_start, char_end, text_hash) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (
                doc,
                i,
                page,
                heading,
                text,
                len(text) // 4,
                start,
                start + len(text),
                hashlib.sha256(text.encode()).hexdigest(),
            ),
        ).fetchone()[0]
        ids.append(cid)
        pos = start + len(text) + 1
    vectors = embedder.embed(chunks)
    for cid, vec in zip(ids, vectors, strict=True):
        conn.execute(
            "INSERT INTO chunk_embeddings (chunk_id, embedding_model, embedding) VALUES (%s, %s, %s)",
            (cid, model or embedder.name, vec),
        )
    if status == "ready":
        bm25.index_document(conn, doc)
    return doc, ids


@pytest.fixture()
def corpus(clean_db, embedder):
    """A small library: an install guide (PDF), recipes (Markdown), an error list (text), a copied page
    (HTML)."""
    old = dt.datetime(2024, 1, 10, tzinfo=dt.timezone.utc)
    new = dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc)
    docs = {}
    with clean_db.connect() as conn:
        docs["install"] = add_document(
            conn,
            embedder,
            [*INSTALL, "To remove the program, delete its folder and your data folder."],
            title="Install guide",
            path="/docs/install-guide.pdf",
            doc_type="pdf",
            pages=[1, 1, 1, 2],
            heading="Installation",
            created=old,
        )
        docs["recipes"] = add_document(
            conn,
            embedder,
            [
                "Whisk two eggs with a cup of flour and a pinch of salt.",
                "Bake the bread for forty minutes until golden brown.",
            ],
            title="Recipes",
            path="/notes/recipes.md",
            doc_type="markdown",
            pages=[1, 2],
            created=new,
        )
        docs["errors"] = add_document(
            conn,
            embedder,
            [
                "Error E4711 means the disk is full; free some space and retry.",
                "Error E1002 means the network cable is unplugged.",
            ],
            title="Error codes",
            path="/notes/errors.txt",
            pages=[1, 2],
            created=new,
        )
        docs["copy"] = add_document(
            conn,
            embedder,
            [INSTALL[0]],
            title="Copied page",
            path="/web/copy.html",
            doc_type="html",
            created=new,
        )
        docs["pending"] = add_document(
            conn,
            embedder,
            ["Installing on Linux is covered in the draft that is still being indexed."],
            title="Draft",
            path="/docs/draft.pdf",
            doc_type="pdf",
            status="embedding",
            created=new,
        )
        # The next version of the install guide, being indexed: the version before answers until it is ready.
        conn.execute(
            "UPDATE documents SET replaces_id = %s WHERE id = %s", (docs["install"][0], docs["pending"][0])
        )
        conn.commit()
    return docs


def test_hybrid_returns_the_shape_the_chat_uses(corpus, library):
    resp = retrieve(library, "How do I install it on Linux?", k=3)
    assert resp.reason is None and resp.error is None
    top = resp.results[0]
    assert top.doc_id == corpus["install"][0]
    assert top.path == "/docs/install-guide.pdf" and top.doc_type == "pdf" and top.title == "Install guide"
    assert top.page_number == 1 and top.heading_path == "Installation"
    assert set(top.scores) == {"vector", "bm25", "vector_rank", "bm25_rank", "fused", "rescore"}
    assert top.scores["vector_rank"] and top.scores["bm25_rank"] and top.scores["fused"] > 0
    assert 0 < top.similarity <= 1 and top.similarity == pytest.approx(top.scores["vector"])
    assert {"embed", "vector", "bm25", "fuse", "merge", "total"} <= set(resp.timings)
    assert all(r.passed_floor for r in resp.results)
    assert len(resp.candidates) >= len(resp.results)
    # The next version of a ready document is not returned before it is ready.
    assert corpus["pending"][0] not in {r.doc_id for r in resp.candidates}


def test_a_search_starts_no_thread_its_host_runs_the_second_leg(corpus, library, monkeypatch):
    """The core starts no thread: without a host the BM25 leg runs after the vector leg on the searching
    thread; with one, on the host's executor, and the results are the same. (``Thread.start`` is wrapped to
    record which threads start: nothing is faked.)"""
    import threading

    from localrag.host import Host

    question = "How do I install it on Linux?"
    retrieve(library, question, k=3)  # the pool's own threads are up before counting
    started: list[str] = []
    real_start = threading.Thread.start

    def recording_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", recording_start)
    alone = retrieve(library, question, k=3)
    assert started == []
    assert "bm25" in alone.timings and alone.results
    with Host(library):
        hosted = retrieve(library, question, k=3)
    assert started and all(name.startswith("search-leg") for name in started)
    assert library.executor is None  # the host is gone with its threads
    assert [r.chunk_ids for r in hosted.results] == [r.chunk_ids for r in alone.results]


def test_adjacent_chunks_merge_into_one_passage(corpus, library):
    resp = retrieve(library, "install Linux installer setup start program", k=4)
    install = [r for r in resp.results if r.doc_id == corpus["install"][0] and r.page_number == 1]
    assert len(install) == 1, [r.chunk_ids for r in resp.results]
    merged = install[0]
    assert merged.chunk_ids == corpus["install"][1][:3]
    assert merged.text == "\n".join(INSTALL)
    assert merged.similarity == max(
        c.similarity for c in resp.candidates if c.chunk_ids[0] in merged.chunk_ids
    )
    # Page 2 of the same document is another passage, never merged across pages.
    assert corpus["install"][1][3] not in merged.chunk_ids


def test_merge_removes_the_overlap_between_chunks(clean_db, library, embedder):
    page = (
        "Solar panels turn light into power. Batteries store that power for the night. "
        "Inverters feed it home."
    )
    a, b = page[:60], page[45:]
    with clean_db.connect() as conn:
        _doc, ids = add_document(conn, embedder, [a, b], title="Solar", path="/solar.txt")
        conn.execute(
            "UPDATE document_chunks SET char_start = 45, char_end = %s WHERE id = %s", (len(page), ids[1])
        )
        conn.commit()
    resp = retrieve(library, "solar panels batteries power", k=2)
    assert resp.results[0].chunk_ids == ids
    assert resp.results[0].text == page
    assert (resp.results[0].char_start, resp.results[0].char_end) == (0, len(page))


def test_identical_text_is_returned_once(corpus, library):
    resp = retrieve(library, "download the package for your Linux distribution", k=8)
    texts = [r.text for r in resp.results]
    assert sum(INSTALL[0] in t for t in texts) == 1
    docs = {r.doc_id for r in resp.results}
    assert not {corpus["install"][0], corpus["copy"][0]} <= docs or len(resp.results) == len(set(texts))


def test_keyword_mode_finds_codes_without_embedding(corpus, library):
    resp = retrieve(library, "E4711", k=3, mode="keyword")
    assert resp.reason is None and "embed" not in resp.timings and "vector" not in resp.timings
    assert resp.results[0].doc_id == corpus["errors"][0]
    assert resp.results[0].scores["vector"] is None and resp.results[0].scores["bm25"] > 0


def test_vector_mode_finds_paraphrases(corpus, library):
    resp = retrieve(library, "how long should I cook the loaf", k=2, mode="vector")
    assert "bm25" not in resp.timings
    assert resp.results[0].doc_id == corpus["recipes"][0]
    assert resp.results[0].scores["bm25"] is None and resp.results[0].scores["vector_rank"] == 1


@pytest.mark.parametrize("query", ["", "   ", "a", "?!", "é"])
def test_empty_and_tiny_queries_return_nothing_at_once(query):
    from localrag.eval.beir import StoreHandle

    # A handle to a store that does not exist: any database or model access would fail.
    dead = StoreHandle("host=/nonexistent port=1 dbname=none user=none", None, Settings())  # type: ignore[arg-type]
    resp = retrieve(dead, query)  # type: ignore[arg-type]
    assert resp.results == [] and resp.reason is None and resp.error is None


def test_each_filter_alone_and_together(corpus, library):
    q = "install the program, error codes, recipes and bread"
    ids = {name: doc for name, (doc, _) in corpus.items()}

    def docs(**filters) -> set[int]:
        resp = retrieve(library, q, k=8, **filters)
        assert resp.reason is None
        return {r.doc_id for r in resp.results}

    everything = docs()
    assert {ids["install"], ids["recipes"], ids["errors"]} <= everything
    assert docs(doc_ids=[ids["errors"]]) == {ids["errors"]}
    assert docs(doc_types=["pdf"]) == {ids["install"]}
    assert docs(doc_types="markdown") == {ids["recipes"]}
    assert docs(path_glob="*.md") == {ids["recipes"]}
    assert docs(path_glob="ERR*") == {ids["errors"]}
    assert docs(path_glob="/notes/*") == {ids["recipes"], ids["errors"]}
    assert docs(added_before="2024-12-31") == {ids["install"]}
    assert docs(added_after=dt.date(2025, 1, 1)) >= {ids["recipes"], ids["errors"]}
    assert ids["install"] not in docs(added_after=dt.date(2025, 1, 1))
    # ANDed.
    assert docs(path_glob="/notes/*", doc_types=["text"]) == {ids["errors"]}
    assert docs(doc_ids=[ids["errors"], ids["recipes"]], added_after="2025-01-01", path_glob="*.md") == {
        ids["recipes"]
    }
    assert docs(doc_ids=[ids["install"]], doc_types=["markdown"]) == set()
    for mode in ("vector", "keyword"):
        resp = retrieve(library, q, k=8, mode=mode, doc_types=["pdf"])
        assert {r.doc_id for r in resp.results} == {ids["install"]}


def test_filtered_queries_still_return_k(clean_db, library, embedder):
    """2,000 chunks on the HNSW index, 2.5% of them markdown: a markdown-only query still fills k."""
    rng = np.random.default_rng(7)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    doc_ids = []
    with clean_db.connect() as conn:
        for d in range(40):
            doc_type = "markdown" if d == 31 else "text"
            doc = conn.execute(
                "INSERT INTO documents (path, title, doc_type, sha256, status) VALUES (%s, %s, %s, %s, "
                "'ready') RETURNING id",
                (f"/f/{d}.{'md' if doc_type == 'markdown' else 'txt'}", f"f{d}", doc_type, f"s{d}"),
            ).fetchone()[0]
            doc_ids.append(doc)
            with conn.cursor().copy(
                "COPY document_chunks (doc_id, chunk_index, page_number, text, token_count, char_start, "
                "char_end, text_hash) FROM STDIN"
            ) as copy:
                for i in range(50):
                    text = " ".join(rng.choice(words, 6)) + f" item{d}x{i}"
                    copy.write_row((doc, i, i + 1, text, 8, 0, len(text), f"{d}-{i}"))
        bm25.index_documents(conn, doc_ids)
        vecs = rng.normal(size=(2000, embedder.dimension)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        chunk_ids = [r[0] for r in conn.execute("SELECT id FROM document_chunks ORDER BY id")]
        with conn.cursor().copy(
            "COPY chunk_embeddings (chunk_id, embedding_model, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "text", "vector"])
            for cid, vec in zip(chunk_ids, vecs, strict=True):
                copy.write_row((cid, embedder.name, vec))
        conn.execute("ANALYZE chunk_embeddings")
        conn.execute("ANALYZE document_chunks")
        conn.execute("ANALYZE documents")
        conn.commit()
        # The unfiltered nearest-neighbour query is answered from the model's HNSW index.
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT e.chunk_id FROM chunk_embeddings e JOIN document_chunks c ON c.id = "
                "e.chunk_id JOIN documents d ON d.id = c.doc_id WHERE e.embedding_model = %s AND d.status = "
                "'ready' ORDER BY e.embedding::vector(384) <=> %s::vector(384) LIMIT 8",
                (embedder.name, vecs[0]),
            )
        )
        assert models.index_name(embedder.name) in plan, plan
        # With iterative scans the index alone fills k for the filtered query (no exact fallback needed).
        conn.execute("SET hnsw.ef_search = 40")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        found = conn.execute(
            "SELECT e.chunk_id FROM chunk_embeddings e JOIN document_chunks c ON c.id = e.chunk_id "
            "JOIN documents d ON d.id = c.doc_id WHERE e.embedding_model = %s AND d.doc_type = 'markdown' "
            "ORDER BY e.embedding::vector(384) <=> %s::vector(384) LIMIT 8",
            (embedder.name, vecs[0]),
        ).fetchall()
        assert len(found) == 8
        conn.rollback()
    # Each leg returns only k candidates, so the HNSW scan must go on past its first ef_search neighbours.
    tight = Tuning(depth=8, ef_search=40, floor=0.0)  # random vectors: no similarity floor
    for mode in ("hybrid", "vector", "keyword"):
        resp = retrieve(library, "alpha gamma omega", k=8, mode=mode, doc_types=["markdown"], tuning=tight)
        assert resp.reason is None
        assert len(resp.results) == 8, mode
        assert {r.path.rsplit(".", 1)[1] for r in resp.results} == {"md"}
    resp = retrieve(
        library, "alpha gamma", k=8, mode="vector", tuning=tight, doc_ids=doc_ids[:2], path_glob="*.txt"
    )
    assert len(resp.results) == 8 and {r.doc_id for r in resp.results} <= set(doc_ids[:2])


def test_floor_applies_to_similarity_and_spares_keyword_hits(corpus, library):
    strict = Tuning(floor=0.99)
    resp = retrieve(library, "bake bread", k=5, mode="vector", tuning=strict)
    assert resp.results == [] and resp.candidates and not any(c.passed_floor for c in resp.candidates)
    resp = retrieve(library, "bake bread", k=5, mode="hybrid", tuning=strict)
    assert resp.results and all(r.scores["bm25_rank"] for r in resp.results)
    assert any(not c.passed_floor for c in resp.candidates)


def test_model_mismatch_returns_nothing_with_a_reason(clean_db, library, embedder):
    with clean_db.connect() as conn:
        models.register_model(conn, "an-older-model", embedder.dimension, activate=False)
        add_document(
            conn,
            embedder,
            ["Vectors from the old model only."],
            title="Old",
            path="/old.txt",
            model="an-older-model",
        )
        conn.commit()
    resp = retrieve(library, "old model vectors")
    assert resp.results == [] and resp.reason == "model_mismatch" and "re-embed" in resp.error
    # Keyword search needs no vectors and still answers.
    resp = retrieve(library, "old model vectors", mode="keyword")
    assert resp.reason is None and len(resp.results) == 1


def test_store_down_is_an_error_not_an_exception(library, embedder, caplog):
    from localrag.eval.beir import StoreHandle

    # Not a mock: a real connection attempt to a server that is not there (the session's own server stays up).
    dead = StoreHandle(
        "host=/nonexistent-socket-dir port=5432 dbname=x user=x connect_timeout=2", embedder, library.settings
    )
    try:
        for mode in ("hybrid", "vector", "keyword"):
            resp = retrieve(dead, "how do I install it", mode=mode)  # type: ignore[arg-type]
            assert resp.results == [] and resp.reason == "error"
            assert "Cannot connect" in resp.error
        assert "retrieval failed" in caplog.text
    finally:
        dead.pool.clear()  # its pool's thread stops trying the missing server (and logging after the test)


def test_a_callers_connection_stays_usable(corpus, library):
    with library.connect() as conn:
        conn.execute("CREATE TEMP TABLE mine (x int)")
        conn.execute("INSERT INTO mine VALUES (1)")
        resp = retrieve(library, "install on Linux", conn=conn)
        assert resp.results
        # A failing retrieval rolls back only its own savepoint.
        bad = retrieve(library, "install on Linux", conn=conn, doc_ids=[2**62], added_after="2020-01-01")
        assert bad.reason is None
        assert conn.execute("SELECT x FROM mine").fetchone() == (1,)
        conn.rollback()


def test_cancel_stops_between_stages(corpus, library):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        retrieve(library, "install on Linux", cancel=token)


def test_a_long_query_is_cut_to_the_model_not_refused(corpus, library):
    query = "How do I install on Linux? " + "Please explain every step in detail. " * 80
    resp = retrieve(library, query, k=2)
    assert resp.reason is None and resp.results


def test_unknown_mode_is_a_bug(library):
    with pytest.raises(ValueError):
        retrieve(library, "anything", mode="fuzzy")


def test_search_command_prints_json(corpus, capsys):
    import json

    from localrag.cli import run_cli

    assert run_cli(["search", "How do I install it on Linux?", "--k", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "hybrid" and out["reason"] is None
    top = out["results"][0]
    assert top["path"] == "/docs/install-guide.pdf" and top["file_name"] == "install-guide.pdf"
    assert top["page_number"] == 1 and top["chunk_ids"] and top["text"]
    assert {"vector", "bm25", "vector_rank", "bm25_rank", "fused"} <= set(top["scores"])
    assert run_cli(["search", "E4711", "--mode", "keyword", "--doc-type", "text"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("1. errors.txt") and "bm25" in printed


def test_a_pooled_connection_the_server_dropped_is_replaced(corpus, library):
    """Retrievals reuse idle connections; one the server has closed since (a restart) must not fail a
    query."""
    assert retrieve(library, "install on Linux").results
    with library.pool.connection() as a, library.pool.connection() as b:
        kept = [a.info.backend_pid, b.info.backend_pid]  # the hybrid query's two, kept idle
    with library.connect(autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) pid", (kept,))
    resp = retrieve(library, "install on Linux")
    assert resp.reason is None and resp.results
    with library.pool.connection() as a, library.pool.connection() as b:
        assert not set(kept) & {a.info.backend_pid, b.info.backend_pid}


def test_ef_search_grows_with_the_store(library):
    """HNSW recall at a fixed ef_search falls as the graph grows: beyond 250k vectors it grows in
    proportion."""
    from localrag.core.retrieve import vector

    with library.connect() as conn:
        assert vector.scaled_ef_search(conn, 100) == 100  # the session's small store
        for vectors, expected in ((500_000, 200), (1_000_000, 400), (10**9, 1000)):
            conn.execute(
                "UPDATE pg_class SET reltuples = %s WHERE oid = 'chunk_embeddings'::regclass", (vectors,)
            )
            assert vector.scaled_ef_search(conn, 100) == expected
        conn.rollback()


def test_while_re_embedding_for_a_new_model_the_old_vectors_keep_answering(
    clean_db, library, embedder, tmp_path, monkeypatch
):
    """After switching embedding models, search by meaning finds every document throughout the re-embedding:
    the previous model answers for the chunks that have no new vector yet, until none is left."""
    import localrag.core.library as library_module
    from localrag.core.embed.model_files import default_embedding_files
    from localrag.core.ingest.pipeline import Ingestor, index_paths
    from localrag.core.library import Library

    monkeypatch.setattr(library_module, "STAND_IN_CHECK_S", 0.0)  # look again at every query
    tides, owls = tmp_path / "tides.txt", tmp_path / "owls.txt"
    tides.write_text("Tides rise and fall twice a day because the Moon pulls on the oceans. " * 4)
    owls.write_text("Owls hunt at night and find their prey by sound alone, even under snow. " * 4)
    assert index_paths(clean_db, [tides, owls]).ready == 2
    # The next model: the bundled one's files in a folder of another name (a model of its own to the store).
    files = default_embedding_files()
    folder = tmp_path / "minilm-next"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(files.onnx)
    (folder / "tokenizer.json").symlink_to(files.tokenizer)
    settings = Settings.load()
    settings.embedding_model_dir = str(folder)
    switched = Library(settings, owner=False)
    switched.open()
    try:
        assert switched.embedder.name == "minilm-next"
        # Nothing re-embedded yet: the previous model answers for everything.
        resp = retrieve(switched, "Why does the sea rise twice daily?", mode="vector", k=3)
        assert resp.reason is None and resp.stand_in == embedder.name
        assert resp.results and resp.results[0].path == str(tides)

        # One document re-embedded: each is found, by the model that has its vectors.
        cancel = CancelToken()

        def stop_after_one(event: Any) -> None:
            if event.status == "ready":
                cancel.cancel()

        with Ingestor(switched, on_event=stop_after_one) as ingestor:
            ingestor.reembed(cancel=cancel)
        with switched.connect() as conn:
            done = conn.execute(
                "SELECT DISTINCT d.path FROM documents d JOIN document_chunks c ON c.doc_id = d.id "
                "JOIN chunk_embeddings e ON e.chunk_id = c.id AND e.embedding_model = 'minilm-next'"
            ).fetchall()
        assert len(done) == 1
        for question, doc in (("Why does the sea rise twice daily?", tides), ("How do owls hunt?", owls)):
            resp = retrieve(switched, question, mode="vector", k=3)
            assert resp.stand_in == embedder.name and resp.results[0].path == str(doc)

        # All re-embedded: the new model alone answers.
        with Ingestor(switched) as ingestor:
            ingestor.reembed()
        resp = retrieve(switched, "How do owls hunt?", mode="vector", k=3)
        assert resp.stand_in == "" and resp.results[0].path == str(owls)
        assert resp.results[0].scores["vector"] is not None
    finally:
        with switched.connect() as conn:
            conn.execute("DELETE FROM chunk_embeddings WHERE embedding_model = 'minilm-next'")
            conn.execute(f"DROP INDEX IF EXISTS {models.index_name('minilm-next')}")
            conn.execute(f"DROP INDEX IF EXISTS {models.piece_index_name('minilm-next')}")
            conn.execute("DELETE FROM embedding_models WHERE name = 'minilm-next'")
            conn.commit()
            models.register_model(conn, embedder.name, embedder.dimension)
        switched.close()
