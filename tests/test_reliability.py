"""Guarantees under faults: kills during ingestion, a dead database, a second instance, hostile input,
exposure.

Everything here is real: real `local-rag ingest` processes killed with SIGKILL, a real PostgreSQL postmaster
killed under the library. No fakes.
"""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localrag.core.ingest.pipeline import Ingestor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals, modes, /proc")

TOPICS = ["glaciers", "volcanoes", "honeybees", "tides", "comets", "mangroves", "lichens", "aurorae"]


def _corpus(folder: Path, edition: int = 0, only: set[int] | None = None) -> list[Path]:
    """Eight notes of different lengths; ``edition`` changes their wording (an edited file), ``only`` picks
    which of them are (re)written."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for i, topic in enumerate(TOPICS):
        path = folder / (f"{topic}.md" if i % 2 else f"{topic}.txt")
        files.append(path)
        if only is not None and i not in only:
            continue
        body = "\n\n".join(
            f"Fact {j} (edition {edition}) about {topic}: "
            + f"{topic.capitalize()} are studied by scientists in many countries. " * 3
            for j in range(4 + 2 * i)
        )
        path.write_text((f"# {topic.capitalize()}\n\n" if i % 2 else "") + body)
    return files


def _ingest_all(library, paths=()):
    with Ingestor(library) as ing:
        ing.enqueue(list(paths))
        return ing.run()


def _visible_state(conn):
    """What retrieval can see: ready documents with their chunk texts, and whether each chunk has its
    vector."""
    rows = conn.execute(
        "SELECT d.path, c.chunk_index, c.text_hash, (SELECT count(*) FROM chunk_embeddings e WHERE "
        "e.chunk_id = c.id) FROM documents d JOIN document_chunks c ON c.doc_id = d.id WHERE d.status = "
        "'ready' ORDER BY d.path, c.chunk_index"
    ).fetchall()
    return rows


def _assert_nothing_half_visible(conn):
    bad = conn.execute(
        "SELECT d.id, d.chunks_total, (SELECT count(*) FROM document_chunks c WHERE c.doc_id = d.id), "
        "(SELECT count(*) FROM document_chunks c JOIN chunk_embeddings e ON e.chunk_id = c.id WHERE c.doc_id "
        "= d.id),(SELECT count(*) FROM document_chunks c WHERE c.doc_id = d.id AND NOT EXISTS "
        "  (SELECT 1 FROM bm25_postings p WHERE p.chunk_id = c.id)) "
        "FROM documents d WHERE d.status = 'ready'"
    ).fetchall()
    for doc_id, total, chunks, vectors, unindexed in bad:
        assert total == chunks == vectors > 0 and unindexed == 0, (doc_id, total, chunks, vectors, unindexed)


def _run_and_kill(
    folder: Path, conn, kill_after_vectors: int | None, kill_after_s: float
) -> tuple[bool, str]:
    """Start `local-rag ingest FOLDER`; SIGKILL it once it has committed ``kill_after_vectors`` new vectors
    (or, when that is None, ``kill_after_s`` seconds after it started, which may be while it is still starting
    up). Returns whether it was killed, and its stderr when it was not."""
    started = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    conn.commit()
    proc = subprocess.Popen(
        [sys.executable, "-m", "localrag", "ingest", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < 120:
        if kill_after_vectors is None:
            due = time.monotonic() - t0 >= kill_after_s
        else:
            new = conn.execute(
                "SELECT count(*) FROM chunk_embeddings WHERE created_at >= %s", (started,)
            ).fetchone()[0]
            conn.commit()
            due = new >= kill_after_vectors
        if due:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True, ""
        time.sleep(0.01)
    if proc.poll() is None:
        proc.kill()
    err = proc.communicate()[1].decode(errors="replace")
    assert proc.returncode == 0, f"local-rag ingest failed ({proc.returncode}):\n{err}"
    return False, err


@pytest.mark.slow
def test_twenty_kills_during_ingestion_lose_nothing(clean_db, tmp_path):
    """`local-rag ingest` SIGKILLed 20 times at random points (while starting, mid-document after some vectors
    were committed, between documents) while files are being edited, then run to the end: the result equals an
    uninterrupted run of the same files, and after every kill no document was half-visible."""
    from localrag.core.retrieve import bm25

    folder = tmp_path / "docs"
    files = _corpus(folder)
    rng = random.Random(20261121)
    kills = 0
    with clean_db.connect() as watch_conn:
        for round_no in range(1, 21):
            # Two notes edited since the last run: every run has documents to (re)index.
            _corpus(folder, edition=round_no, only=set(rng.sample(range(len(TOPICS)), 2)))
            if round_no % 4 == 0:
                killed, _ = _run_and_kill(folder, watch_conn, None, rng.uniform(0.05, 1.0))
            else:
                killed, _ = _run_and_kill(folder, watch_conn, rng.randint(1, 4), 0)
            kills += killed
            with clean_db.connect() as conn:
                _assert_nothing_half_visible(conn)
                assert (
                    conn.execute("SELECT count(*) FROM documents WHERE status = 'failed'").fetchone()[0] == 0
                )
    assert kills >= 15  # the runs really were interrupted
    _ingest_all(clean_db, [tmp_path / "docs"])
    with clean_db.connect() as conn:
        killed_state = _visible_state(conn)
        statuses = conn.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall()
        drift = bm25.stats_drift(conn)
    assert statuses == [("ready", len(files))]
    assert set(drift.values()) == {0}

    # The same files, indexed once without interruption, in a fresh store.
    with clean_db.connect() as conn:
        conn.execute("TRUNCATE documents RESTART IDENTITY CASCADE")
        conn.execute("TRUNCATE bm25_terms")
        conn.execute("UPDATE bm25_stats SET n_chunks = 0, total_len = 0")
        conn.commit()
    _ingest_all(clean_db, [tmp_path / "docs"])
    with clean_db.connect() as conn:
        clean_state = _visible_state(conn)
    assert killed_state == clean_state
    assert all(r[3] == 1 for r in clean_state)


@pytest.mark.slow
def test_kills_during_reembedding_lose_nothing(clean_db, tmp_path):
    """After a switch of embedding model, `local-rag reembed` SIGKILLed 20 times after a random number of new
    vectors, then run to the end: documents stay ready throughout, every committed vector is whole, and in the
    end every chunk has its vector from the new model. (The "new" model is the bundled one under another name,
    so each new vector must equal the old one.)"""
    import numpy as np
    from pgvector.psycopg import register_vector

    from localrag.core.embed import model_files
    from localrag.core.store import models

    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(40):  # many small documents: re-embedding commits a document at a time
        (folder / f"note{i:02d}.txt").write_text(
            f"Note {i} on {TOPICS[i % len(TOPICS)]}: "
            + f"observations number {i} were recorded in the field. " * (4 + i % 5)
        )
    _ingest_all(clean_db, [folder])
    bundled = model_files.default_embedding_files()
    switched = tmp_path / "minilm-switched"
    switched.mkdir()
    (switched / "model.onnx").symlink_to(bundled.onnx)
    (switched / "tokenizer.json").symlink_to(bundled.tokenizer)
    env = {**os.environ, "LOCALRAG_EMBEDDING_MODEL_DIR": str(switched)}
    old_model = clean_db.embedder.name
    rng = random.Random(20261122)
    kills = 0
    try:
        with clean_db.connect() as conn:
            register_vector(conn)
            n_chunks = conn.execute("SELECT count(*) FROM document_chunks").fetchone()[0]
            for _ in range(20):
                count = "SELECT count(*) FROM chunk_embeddings WHERE embedding_model = 'minilm-switched'"
                before = conn.execute(count).fetchone()[0]
                target = before + rng.randint(1, 3)
                proc = subprocess.Popen(
                    [sys.executable, "-m", "localrag", "reembed"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                t0 = time.monotonic()
                while proc.poll() is None and time.monotonic() - t0 < 120:
                    have = conn.execute(count).fetchone()[0]
                    conn.commit()
                    if target <= have < n_chunks:
                        proc.send_signal(signal.SIGKILL)
                        kills += 1
                        break
                    time.sleep(0.01)
                proc.wait()
                if proc.returncode != -signal.SIGKILL:
                    assert proc.returncode == 0, proc.stderr.read().decode(errors="replace")
                proc.stderr.close()
                assert conn.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall() == [
                    ("ready", 40)
                ]
                pairs = conn.execute(
                    "SELECT o.embedding::vector(384), n.embedding::vector(384) FROM chunk_embeddings n "
                    "JOIN chunk_embeddings o ON o.chunk_id = n.chunk_id AND o.embedding_model = %s "
                    "WHERE n.embedding_model = %s",
                    (old_model, "minilm-switched"),
                ).fetchall()
                conn.commit()
                assert all(np.allclose(old.to_numpy(), new.to_numpy(), atol=1e-5) for old, new in pairs)
        assert kills >= 10, kills
        done = subprocess.run(
            [sys.executable, "-m", "localrag", "reembed"], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        with clean_db.connect() as conn:
            counts = conn.execute(
                "SELECT embedding_model, count(*) FROM chunk_embeddings GROUP BY 1 ORDER BY 1"
            ).fetchall()
        assert counts == sorted([(old_model, n_chunks), ("minilm-switched", n_chunks)])
    finally:
        with clean_db.connect() as conn:
            conn.execute("DELETE FROM embedding_models WHERE name = %s", ("minilm-switched",))
            conn.execute(f"DROP INDEX IF EXISTS {models.index_name('minilm-switched')}")
            conn.commit()
            models.register_model(conn, old_model, clean_db.embedder.dimension)


def test_database_killed_under_the_library_is_noticed_and_restarted(tmp_path, monkeypatch):
    """The postmaster dies: a query in flight returns reason="error" (no exception), the library restarts the
    server, committed documents are still there, and an ingest that was running carries on."""
    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.core.retrieve import retrieve

    monkeypatch.setenv("LOCALRAG_HOME", str(tmp_path / "home"))
    library = Library(Settings.load())
    library.open()
    try:
        files = _corpus(tmp_path / "docs")
        _ingest_all(library, files[:2])
        before = retrieve(library, "glaciers studied by scientists")
        assert before.reason is None and before.results

        os.kill(library.server.postmaster_pid(), signal.SIGKILL)
        deadline = time.monotonic() + 10
        while library.server.is_running() and time.monotonic() < deadline:
            time.sleep(0.05)
        during = retrieve(library, "glaciers studied by scientists")
        assert during.reason == "error" and during.results == [] and during.error

        # An ingest started now reconnects through the library, which restarts the server.
        summary = _ingest_all(library, files[2:4])
        assert summary.ready == 2
        assert library.server.is_running()
        after = retrieve(library, "glaciers studied by scientists")
        assert after.reason is None and after.results
        with library.connect() as conn:
            assert conn.execute("SELECT count(*) FROM documents WHERE status = 'ready'").fetchone()[0] == 4
    finally:
        library.close()


def test_second_app_on_the_same_data_folder_is_refused(library):
    from localrag.core.config import Settings
    from localrag.core.errors import AlreadyRunning
    from localrag.core.library import Library

    with pytest.raises(AlreadyRunning, match="already running on the data folder"):
        Library(Settings.load(), owner=True).open()
    guest = Library(Settings.load(), owner=False)  # a terminal command attaches instead
    guest.open()
    with guest.connect() as conn:
        assert conn.execute("SELECT 1").fetchone()[0] == 1
    guest.close()
    with library.connect() as conn:  # and the owner's server is still up
        assert conn.execute("SELECT 1").fetchone()[0] == 1


def test_data_folder_is_private_and_the_server_unexposed(library, home):
    from localrag.core import paths

    assert stat.S_IMODE(home.stat().st_mode) & 0o077 in (
        0,
        0o011,
    )  # 0o011: traverse-only for the service user
    assert stat.S_IMODE((home / "pg.secret").stat().st_mode) == 0o600
    assert stat.S_IMODE(paths.pg_data_dir().stat().st_mode) == 0o700
    with library.connect() as conn:
        assert conn.execute("SHOW listen_addresses").fetchone()[0] == ""
        hba = conn.execute("SELECT DISTINCT auth_method FROM pg_hba_file_rules").fetchall()
    assert {r[0] for r in hba} == {"scram-sha-256"}
    password = (home / "pg.secret").read_text().strip()
    for log in (home / "logs").rglob("*"):
        if log.is_file():
            assert password not in log.read_text(errors="replace"), log


def test_hostile_text_and_names_cannot_alter_sql(clean_db, tmp_path):
    from localrag.core.retrieve import retrieve

    evil = "Robert'); DROP TABLE documents; -- and $$; DELETE FROM chunk_embeddings; $$ \\' \x01"
    path = tmp_path / "x'); DROP TABLE documents; --.md"
    path.write_text(f"# {evil}\n\n{evil} Bobby tables studies databases.\n")
    summary = _ingest_all(clean_db, [path])
    assert summary.ready == 1
    for mode in ("hybrid", "keyword", "vector"):
        resp = retrieve(clean_db, evil, mode=mode)
        assert resp.reason is None
    resp = retrieve(clean_db, "Bobby tables databases")
    assert resp.results and "DROP TABLE" in resp.results[0].text
    with clean_db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM chunk_embeddings").fetchone()[0] >= 1


@pytest.mark.slow
def test_two_thousand_page_pdf_ingests_in_bounded_memory(clean_db, tmp_path):
    """A 2,000-page PDF goes through `local-rag ingest` with peak RSS well under 1.5 GB: every page is read,
    in order, to the last. One page in ten has text (the rest are blank, as between chapters): the pages are
    what a long PDF brings to the reader, and 200 chunks embed in seconds where 2,000 took minutes (the
    embedding of many chunks in bounded memory: tests/test_memory_bounds.py)."""
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    with_text = []
    for n in range(2000):
        page = pdf.new_page(612, 792)
        if n % 10 != 9:
            continue
        with_text.append(n + 1)
        obj = raw.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 11.0)
        text = f"Page {n + 1}: measurement {n * 17 % 997} of the river delta sediment survey." + "\x00"
        ws = text.encode("utf-16-le")
        raw.FPDFText_SetText(obj, (ctypes.c_ushort * (len(ws) // 2)).from_buffer_copy(ws))
        raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 50, 700)
        raw.FPDFPage_InsertObject(page.raw, obj)
        raw.FPDFPage_GenerateContent(page.raw)
    pdf.save(str(tmp_path / "survey.pdf"))
    pdf.close()

    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the (large) forking test process.
    code = (
        "import re, sys\n"
        "from localrag.__main__ import main\n"
        "rc = main(['ingest', sys.argv[1], '--json'])\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print('PEAK_KB', hwm, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "survey.pdf")],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    peak_mb = int(result.stderr.rsplit("PEAK_KB", 1)[1].split()[0]) / 1024
    with clean_db.connect() as conn:
        pages, chunks, status = conn.execute("SELECT pages, chunks_total, status FROM documents").fetchone()
        numbered = [r[0] for r in conn.execute("SELECT DISTINCT page_number FROM document_chunks ORDER BY 1")]
    assert (pages, status) == (2000, "ready") and chunks >= len(with_text)
    assert numbered == with_text  # each page's text under its own number, the 2,000th last
    print(f"2,000-page PDF: peak RSS {peak_mb:.0f} MB")
    assert peak_mb < 1500
