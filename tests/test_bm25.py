"""BM25 inside PostgreSQL: postings and statistics follow documents in and out, and scores are Lucene's
BM25."""

from __future__ import annotations

import hashlib
import math
import threading

import pytest

from localrag.core.retrieve import bm25


def _add_doc(conn, texts: list[str], *, status: str = "ready", headings: list[str] | None = None) -> int:
    doc = conn.execute(
        "INSERT INTO documents (path, title, doc_type, sha256, status) VALUES (%s, %s, 'text', %s, %s) "
        "RETURNING id",
        (
            f"/t/{texts[0][:20]}.txt",
            texts[0][:20],
            hashlib.sha256("|".join(texts).encode()).hexdigest(),
            status,
        ),
    ).fetchone()[0]
    pos = 0
    for i, text in enumerate(texts):
        conn.execute(
            "INSERT INTO document_chunks (doc_id, chunk_index, page_number, heading_path, text, token_count, "
            "char_start, char_end, text_hash) VALUES (%s, %s, 1, %s, %s, 10, %s, %s, %s)",
            (
                doc,
                i,
                (headings or [""] * len(texts))[i],
                text,
                pos,
                pos + len(text),
                hashlib.sha256(text.encode()).hexdigest(),
            ),
        )
        pos += len(text) + 1
    return doc


def _stats(conn) -> tuple[int, int]:
    return conn.execute("SELECT n_chunks, total_len FROM bm25_stats").fetchone()


def _df(conn, term: str) -> int | None:
    row = conn.execute("SELECT df FROM bm25_terms WHERE term = %s", (term,)).fetchone()
    return row[0] if row else None


def test_index_document_writes_postings_lengths_and_statistics(clean_db):
    with clean_db.connect() as conn:
        doc = _add_doc(conn, ["Cats chase cats and dogs.", "Dogs sleep.", "the of and"])
        bm25.index_document(conn, doc)
        conn.commit()
        postings = {
            (t, i): tf
            for t, i, tf in conn.execute(
                "SELECT p.term, c.chunk_index, p.tf FROM bm25_postings p JOIN document_chunks c ON c.id = "
                "p.chunk_id"
            )
        }
        assert postings == {("cat", 0): 2, ("chase", 0): 1, ("dog", 0): 1, ("dog", 1): 1, ("sleep", 1): 1}
        lengths = [
            r[0] for r in conn.execute("SELECT lexeme_count FROM document_chunks ORDER BY chunk_index")
        ]
        assert lengths == [4, 2, 0]
        # The stop-word-only chunk can never match, so it is not counted in N.
        assert _stats(conn) == (2, 6)
        assert _df(conn, "dog") == 2 and _df(conn, "cat") == 1
        assert bm25.stats_drift(conn) == {"n_chunks": 0, "total_len": 0, "terms": 0, "lengths": 0}


def test_heading_path_is_indexed(clean_db):
    with clean_db.connect() as conn:
        doc = _add_doc(conn, ["Plain body text."], headings=["Installation > Linux"])
        bm25.index_document(conn, doc)
        assert [cid for cid, _ in bm25.search(conn, "linux installation", n=5)]


def test_statistics_stay_right_after_deletes_and_repeats(clean_db):
    with clean_db.connect() as conn:
        a = _add_doc(conn, ["alpha beta gamma", "beta delta"])
        b = _add_doc(conn, ["gamma epsilon", "unique zeta words here"])
        c = _add_doc(conn, ["alpha omega"])
        for d in (a, b, c):
            bm25.index_document(conn, d)
        bm25.index_document(conn, b)  # a repeat never counts twice
        conn.commit()
        assert _stats(conn) == (5, 12)  # "here" is a stop word
        assert _df(conn, "gamma") == 2

        bm25.unindex_document(conn, b)
        conn.execute("DELETE FROM documents WHERE id = %s", (b,))
        conn.commit()
        assert _stats(conn) == (3, 7)
        assert _df(conn, "gamma") == 1 and _df(conn, "zeta") is None and _df(conn, "epsilon") is None
        assert bm25.stats_drift(conn) == {"n_chunks": 0, "total_len": 0, "terms": 0, "lengths": 0}

        bm25.unindex_document(conn, a)
        bm25.unindex_document(conn, c)
        conn.commit()
        assert _stats(conn) == (0, 0)
        assert conn.execute("SELECT count(*) FROM bm25_terms").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM bm25_postings").fetchone()[0] == 0


def test_unindex_rolls_back_with_the_callers_transaction(clean_db):
    with clean_db.connect() as conn:
        doc = _add_doc(conn, ["rollback keeps postings"])
        bm25.index_document(conn, doc)
        conn.commit()
        bm25.unindex_document(conn, doc)
        conn.rollback()
        assert _stats(conn) == (1, 3)
        assert bm25.stats_drift(conn)["terms"] == 0


def test_scores_are_lucene_bm25(clean_db):
    texts = ["apple banana apple", "banana cherry", "cherry date elderberry fig", "apple"]
    with clean_db.connect() as conn:
        doc = _add_doc(conn, texts)
        bm25.index_document(conn, doc)
        got = dict(bm25.search(conn, "apple cherry", n=10, k1=1.2, b=0.75))
        ids = [r[0] for r in conn.execute("SELECT id FROM document_chunks ORDER BY chunk_index")]
    docs = [t.split() for t in texts]
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)

    def idf(term: str) -> float:
        df = sum(term in d for d in docs)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    for cid, words in zip(ids, docs, strict=True):
        want = sum(
            idf(t) * words.count(t) * 2.2 / (words.count(t) + 1.2 * (0.25 + 0.75 * len(words) / avgdl))
            for t in ("apple", "cherry")
            if t in words
        )
        if want:
            assert got[cid] == pytest.approx(want, rel=1e-9)
        else:
            assert cid not in got
    assert list(got) == sorted(got, key=lambda c: -got[c])


def test_query_without_lexemes_matches_nothing(clean_db):
    with clean_db.connect() as conn:
        doc = _add_doc(conn, ["the quick brown fox"])
        bm25.index_document(conn, doc)
        assert bm25.search(conn, "the of and", n=5) == []
        assert bm25.search(conn, "", n=5) == []


def test_concurrent_indexing_does_not_deadlock_and_counts_right(clean_db):
    words = [f"w{i:03d}" for i in range(300)]
    docs = []
    with clean_db.connect() as conn:
        for j in range(6):
            # Every document shares most terms, in different orders.
            order = words[j * 7 :] + words[: j * 7]
            docs.append(_add_doc(conn, [" ".join(order[i : i + 40]) for i in range(0, 300, 40)]))
        conn.commit()
    errors: list[BaseException] = []

    def work(doc_id: int) -> None:
        try:
            with clean_db.connect() as c:
                bm25.index_document(c, doc_id)
                c.commit()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(d,)) for d in docs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with clean_db.connect() as conn:
        assert bm25.stats_drift(conn) == {"n_chunks": 0, "total_len": 0, "terms": 0, "lengths": 0}
        assert _df(conn, "w000") == 6
        # ... and removals racing each other too.
        threads = [threading.Thread(target=_unindex, args=(clean_db, d, errors)) for d in docs[:4]]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        assert bm25.stats_drift(conn) == {"n_chunks": 0, "total_len": 0, "terms": 0, "lengths": 0}
        assert _df(conn, "w000") == 2


def _unindex(library, doc_id: int, errors: list) -> None:
    try:
        with library.connect() as c:
            bm25.unindex_document(c, doc_id)
            c.commit()
    except BaseException as exc:
        errors.append(exc)


def test_rebuild_repairs_statistics(clean_db):
    with clean_db.connect() as conn:
        doc = _add_doc(conn, ["repair these counts", "counts again"])
        bm25.index_document(conn, doc)
        conn.execute("UPDATE bm25_stats SET n_chunks = 99")
        conn.execute("UPDATE bm25_terms SET df = 7")
        assert bm25.stats_drift(conn)["n_chunks"] == 97
        bm25.rebuild(conn)
        assert bm25.stats_drift(conn) == {"n_chunks": 0, "total_len": 0, "terms": 0, "lengths": 0}


def test_frequent_terms_read_best_first_keep_the_top_n_and_exact_scores(clean_db, monkeypatch):
    """Reading only a frequent term's best postings finds (nearly) the exact top n, each with its exact
    score."""
    import numpy as np

    rng = np.random.default_rng(3)
    vocab = [f"t{i}" for i in range(300)]
    probs = 1.0 / np.arange(1, 301)
    probs /= probs.sum()  # Zipf: a few terms are in most chunks
    with clean_db.connect() as conn:
        docs = [
            _add_doc(conn, [" ".join(rng.choice(vocab, rng.integers(10, 60), p=probs)) for _ in range(20)])
            for _ in range(15)
        ]
        bm25.index_documents(conn, docs)
        queries = [" ".join(rng.choice(vocab, 4, p=probs)) + f" t{rng.integers(50, 300)}" for _ in range(40)]
        exact = [dict(bm25.search(conn, q, n=300, exact=True)) for q in queries]
        monkeypatch.setattr(bm25, "TERM_POSTINGS_READ", 25)
        monkeypatch.setattr(bm25, "RESCORED", 30)
        monkeypatch.setattr(
            bm25, "_impact_order_pays", lambda dfs: True
        )  # a small store, read as a large one
        overlap = []
        for q, want in zip(queries, exact, strict=True):
            got = bm25.search(conn, q, n=10)
            assert len(got) == 10
            for cid, score in got:  # every score is the chunk's true BM25 score
                assert score == pytest.approx(want[cid], rel=1e-9)
            assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
            best = sorted(want, key=lambda c: (-want[c], c))[:10]
            overlap.append(len({c for c, _ in got} & set(best)) / 10)
        assert np.mean(overlap) >= 0.9, overlap
        # Filtered: only allowed chunks, exact scores; a filter that leaves too few falls back to every
        # posting.
        from localrag.core.retrieve.filters import Filters

        for allowed in (docs[:6], docs[:1]):
            f = Filters.build(doc_ids=allowed)
            mine = {
                r[0]
                for r in conn.execute("SELECT id FROM document_chunks WHERE doc_id = ANY(%s)", (allowed,))
            }
            for q in queries[:15]:
                want = dict(bm25.search(conn, q, n=300, filters=f, exact=True))
                got = bm25.search(conn, q, n=10, filters=f)
                assert {c for c, _ in got} <= mine and len(got) == min(10, len(want))
                for cid, score in got:
                    assert score == pytest.approx(want[cid], rel=1e-9)
                if len(allowed) == 1:
                    assert [c for c, _ in got] == sorted(want, key=lambda c: (-want[c], c))[:10]
        # The frequent terms' best postings can be read in order from the impact index (the planner prefers
        # that on a large store; this one is small, so the alternatives are switched off to see that it can).
        conn.execute("SET enable_bitmapscan = off")
        conn.execute("SET enable_sort = off")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN " + bm25._impact_sql(),
                {
                    "terms": ["t0", "t1"],
                    "weights": [0.1, 0.2],
                    "n": 10,
                    "k1": 1.2,
                    "b": 0.75,
                    "avgdl": 30.0,
                    "m": 25,
                    "r": 30,
                },
            )
        )
        assert "Index Only Scan using bm25_postings_impact" in plan, plan
        assert not [line for line in plan.splitlines() if "Sort Key" in line and "0.009" in line], plan


def test_best_first_reading_is_kept_for_queries_it_pays_for():
    """Short postings lists are read whole (as fast, and exact); long ones best first."""
    assert not bm25._impact_order_pays([120, 900, 1500])  # every list shorter than what is read per term
    assert not bm25._impact_order_pays(
        [2500, 3000]
    )  # a little longer: rescoring would cost more than it saves
    assert bm25._impact_order_pays([15_000, 40_000, 90_000, 120_000])  # a 1M-chunk library's frequent terms


MANUAL = (
    "The \u2018set\u2019 builtin with \u2018-o pipefail\u2019 changes the shell\u2019s exit status in "
    "2010\u20132015."
)
GLUED = (
    "Press the\u00a0reset button\u2026 then wait \u2014 the model\u2019s lamp blinks inter\u00adnationally."
)


def test_words_in_typographic_quotes_dashes_and_no_break_spaces_are_found(clean_db):
    with clean_db.connect() as conn:
        doc = _add_doc(conn, [MANUAL, GLUED])
        bm25.index_document(conn, doc)
        for words, chunk in [
            ("set builtin", 0),
            ("pipefail", 0),
            ("shell exit status", 0),
            ("2015", 0),
            ("reset button", 1),
            ("model lamp", 1),
        ]:
            found = [cid for cid, _ in bm25.search(conn, words, n=5)]
            index = conn.execute(
                "SELECT chunk_index FROM document_chunks WHERE id = %s", (found[0],)
            ).fetchone()
            assert index == (chunk,), words


def test_the_latest_postings_migration_writes_them_as_the_app_does_and_upgrades_a_library(
    clean_db, monkeypatch
):
    from localrag.core.store.migrate import load_migrations

    rebuild = [m for m in load_migrations() if bm25.INDEXED_TEXT in m.up]
    assert rebuild, "a change to what BM25 reads needs a migration that writes the postings again"
    with clean_db.connect() as conn:
        # A library indexed before the marks were read: the postings as the parser gave them then.
        monkeypatch.setattr(bm25, "INDEXED_TEXT", "to_tsvector('english', c.heading_path || ' ' || c.text)")
        doc = _add_doc(conn, [MANUAL, GLUED, "Plain words stay as they were."])
        bm25.index_document(conn, doc)
        assert not bm25.search(conn, "pipefail", n=5)
        monkeypatch.undo()
        conn.execute(rebuild[-1].up)
        conn.commit()
        assert bm25.search(conn, "pipefail", n=5) and bm25.search(conn, "reset button", n=5)
        assert bm25.stats_drift(conn) == {"n_chunks": 0, "total_len": 0, "terms": 0, "lengths": 0}
        # The same postings as indexing the document now writes.
        before = sorted(conn.execute("SELECT term, chunk_id, tf, dl FROM bm25_postings").fetchall())
        bm25.index_document(conn, doc)
        assert sorted(conn.execute("SELECT term, chunk_id, tf, dl FROM bm25_postings").fetchall()) == before
