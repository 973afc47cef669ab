"""Small files indexed in groups (``core/ingest/groups.py``): their chunks and pieces are embedded
together, and every file still ends up with its own chunks, each with its own vector, as if it had been
indexed alone."""

from __future__ import annotations

import numpy as np

from localrag.core.ingest import groups, pieces
from localrag.core.ingest.pipeline import index_paths
from localrag.core.text import identity

SUBJECTS = ("the boiler", "the gate", "the roof", "the kettle", "the piano", "the bicycle", "the fence")
WHEN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def test_many_small_files_each_get_their_own_chunks_and_vectors(clean_db, embedder, tmp_path, monkeypatch):
    monkeypatch.setattr(groups, "SMALL_FILE_BYTES", 2_000)  # so that a file of a few chunks is not small
    count = groups.GROUP_DOCS + 6  # more than one group
    for i in range(count):
        subject, day = SUBJECTS[i % len(SUBJECTS)], WHEN[(i // len(SUBJECTS)) % len(WHEN)]
        (tmp_path / f"note-{i:03d}.txt").write_text(f"Note {i}: {subject} is checked on {day} by team {i}.\n")
    (tmp_path / "note-empty.txt").write_text("")  # fails alone, with its reason
    longer = " ".join(f"Paragraph {n} of the long note says the hedge is cut in week {n}." for n in range(40))
    assert len(longer) > groups.SMALL_FILE_BYTES
    (tmp_path / "note-long.txt").write_text(longer)  # too large to be grouped: indexed on its own

    summary = index_paths(clean_db, [tmp_path])

    assert summary.ready == count + 1  # each document once
    model = embedder.name
    with clean_db.connect() as conn:
        failed = conn.execute("SELECT path, error_code FROM documents WHERE status <> 'ready'").fetchall()
        assert len(failed) == 1 and failed[0][0].endswith("note-empty.txt") and failed[0][1] == "empty"
        rows = conn.execute(
            "SELECT d.path, c.id, c.text, c.context, c.token_count, e.embedding::text FROM documents d "
            "JOIN document_chunks c ON c.doc_id = d.id JOIN chunk_embeddings e ON e.chunk_id = c.id "
            "AND e.embedding_model = %s WHERE d.status = 'ready' ORDER BY d.path, c.chunk_index",
            (model,),
        ).fetchall()
        chunk_count = conn.execute("SELECT count(*) FROM document_chunks").fetchone()[0]
        stored_pieces = conn.execute(
            "SELECT chunk_id, count(*) FROM chunk_piece_embeddings WHERE embedding_model = %s GROUP BY 1",
            (model,),
        ).fetchall()
        embedded = conn.execute(
            "SELECT count(*) FROM documents WHERE status = 'ready' AND chunks_embedded = chunks_total"
        ).fetchone()[0]
    assert len(rows) == chunk_count > count  # every chunk has exactly one vector
    assert embedded == count + 1
    notes = [r for r in rows if "note-long" not in r[0]]
    assert len(notes) == count and all(f"Note {int(r[0][-7:-4])}:" in r[2] for r in notes)
    # Each vector is its own chunk's: the same as embedding that chunk alone.
    fit = identity.ContextFitter(embedder)
    for _path, _cid, text, context, n, stored in notes[:: max(1, count // 12)]:
        alone = embedder.embed([identity.embedding_text(fit(context, n), text)])[0]
        assert float(np.dot(alone, np.array(stored.strip("[]").split(","), dtype=np.float32))) > 0.999
    # And every chunk has its pieces.
    counter = pieces.token_counter(embedder)
    by_chunk = dict(stored_pieces)
    assert all(by_chunk.get(cid) == len(pieces.piece_texts(text, counter)) for _p, cid, text, *_ in rows)


def test_an_ingestor_claims_past_a_page_of_documents_another_one_holds(clean_db, tmp_path, monkeypatch):
    """Claiming looks at the queue a page at a time; the documents another ingestor holds (more than a page
    of them) are passed over, and the next free one is claimed."""
    from localrag.core.ingest import queue
    from localrag.core.ingest.pipeline import Ingestor

    monkeypatch.setattr(queue, "CLAIM_PAGE", 4)
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(11):
        (folder / f"note{i:02d}.txt").write_text(f"Note {i}: the pantry holds jar {i}.\n")
    with Ingestor(clean_db) as other, Ingestor(clean_db) as mine:
        queued = [e.doc_id for e in other.enqueue([folder])]
        held: list[int] = []
        for _ in range(9):  # more than two pages
            doc_id = other.queue.claim_next(held)
            assert doc_id is not None
            held.append(doc_id)
        assert held == queued[:9]
        assert mine.queue.claim_next() == queued[9]
        assert mine.queue.claim_next([queued[9]]) == queued[10]
        assert mine.queue.claim_next(queued[9:]) is None
