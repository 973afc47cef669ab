"""Chunk pieces: a few sentences of a chunk with a vector of their own (``core/ingest/pieces.py``), written
at ingestion and by re-embedding a library indexed before them; the vector leg finds a chunk by its best
piece."""

from __future__ import annotations

from localrag.core.ingest import pieces
from localrag.core.ingest.documents import reembed_needed
from localrag.core.ingest.pipeline import Ingestor, index_paths
from localrag.core.retrieve import retrieve
from localrag.core.retrieve.retriever import Tuning

WATERING = (
    "The allotment's watering rota runs from May to September. Each plot holder takes one week in turn, "
    "and the rota is pinned to the shed door. Water butts are filled from the roof gutters of the shed "
    "and the greenhouse, and members are asked to use cans rather than hoses on dry days. The committee "
    "bought a new petrol pump for the pond in April. If the pump makes a noise but no water flows out "
    "of it, it has lost its prime: fill the pump housing with water through the priming plug before "
    "starting it again. Hoses must be coiled and hung on the hooks after use, and the standpipe tap "
    "must be closed at the end of the day."
)
NOISE = (
    "The pond pump makes a loud noise while it runs, so neighbours have asked that it is used only "
    "between nine in the morning and six in the evening. Ear defenders are kept in the store for anyone "
    "running the pump for long. Members who find the noise of the pump a problem should speak to the "
    "committee. The pump is serviced each winter by a volunteer. Book the pump on the sheet in the "
    "shed."
)
QUESTION = "My pump makes a noise but nothing flows out of it. What should I do?"


def test_a_sentence_that_answers_finds_its_chunk_among_others_on_other_matters(clean_db, embedder, tmp_path):
    """The chunk that holds the answer is mostly about watering; the one about the pump's noise is nearer the
    question as a whole. By the chunks' own vectors the noise wins; with their pieces, the answer does."""
    doc = tmp_path / "handbook.md"
    sections = f"## Watering\n\n{WATERING}\n\n## Noise from the pond pump\n\n{NOISE}\n"
    doc.write_text(f"# Site handbook\n\n{sections}")
    assert index_paths(clean_db, [doc]).ready == 1

    def first(weight: float) -> str:
        resp = retrieve(clean_db, QUESTION, mode="vector", k=3, tuning=Tuning(pieces=weight), route=False)
        assert resp.reason is None and resp.results
        return resp.results[0].text

    assert "pond pump makes a loud noise" in first(0.0)
    assert "lost its prime" in first(1.0)


def test_a_library_indexed_before_pieces_gets_them_by_re_embedding(clean_db, embedder, tmp_path):
    doc = tmp_path / "watering.txt"
    doc.write_text(WATERING + "\n\n" + NOISE)
    assert index_paths(clean_db, [doc]).ready == 1
    model = embedder.name
    with clean_db.connect() as conn:
        chunks = conn.execute("SELECT id, text FROM document_chunks").fetchall()
        stored = conn.execute("SELECT chunk_id, piece FROM chunk_piece_embeddings ORDER BY 1, 2").fetchall()
        count = pieces.token_counter(embedder)
        assert len(stored) == sum(len(pieces.piece_texts(text, count)) for _, text in chunks) > len(chunks)
        assert {cid for cid, _ in stored} == {cid for cid, _ in chunks}
        assert reembed_needed(conn, model) == 0
        conn.execute("DELETE FROM chunk_piece_embeddings")  # as a library from before pieces
        conn.commit()
        assert reembed_needed(conn, model) == 1
    # Until re-embedded, its chunks are still found by their own vectors.
    assert retrieve(clean_db, QUESTION, mode="vector", k=3).results
    with Ingestor(clean_db) as ingestor:
        summary = ingestor.reembed()
    assert summary.embedded_pieces == len(stored) and summary.embedded_chunks == 0
    with clean_db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM chunk_piece_embeddings").fetchone()[0] == len(stored)
        assert reembed_needed(conn, model) == 0


def test_windows_start_at_each_sentence_and_stop_at_the_width():
    text = "One two three. Four five six. Seven eight nine. Ten."
    words = lambda texts: [len(t.split()) for t in texts]  # noqa: E731
    assert pieces.piece_texts(text, words, width=6) == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten.",
    ]
    assert pieces.piece_texts("A single sentence far longer than the width.", words, width=3) == [
        "A single sentence far longer than the width."
    ]


def test_a_vector_is_stored_as_pgvector_reads_it_and_read_back_the_same(clean_db, embedder):
    """The text a vector is copied in reads back, through pgvector, as the model's vector to seven digits."""
    import numpy as np

    vectors = embedder.embed(["The moraine survey crossed the valley.", "x"])
    vectors = np.vstack([vectors, np.array([[1e-9, -0.0, 3.0e7] + [0.25] * (vectors.shape[1] - 3)])])
    with clean_db.connect() as conn:
        for vec in vectors.astype(np.float32):
            text = pieces.vector_text(vec)
            assert text.startswith("[") and text.count(",") == len(vec) - 1
            back = conn.execute("SELECT %s::vector::text", (text,)).fetchone()[0]
            read = np.array([float(x) for x in back.strip("[]").split(",")], dtype=np.float32)
            assert np.allclose(read, vec, rtol=1e-6, atol=0)
