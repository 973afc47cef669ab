"""Ingestion end to end: real files, the real embedder, the real database."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fixtures_docs import write_content_pdf
from localrag.core.ingest.pipeline import Ingestor
from localrag.core.retrieve import bm25, retrieve
from localrag.core.text import glyphs, identity

LOREM = (
    "Photosynthesis converts light energy into chemical energy stored in glucose. "
    "Chlorophyll absorbs mostly blue and red light and reflects green. "
    "The Calvin cycle fixes carbon dioxide into three-carbon sugars. "
)


def _ingest(library, paths):
    events = []
    with Ingestor(library, on_event=events.append) as ing:
        queued = ing.enqueue(paths)
        summary = ing.run()
    return queued, summary, events


def _doc_rows(library):
    with library.connect() as conn:
        return conn.execute(
            "SELECT id, title, doc_type, status, error_code, chunks_total, chunks_embedded FROM documents "
            "ORDER BY id"
        ).fetchall()


def _write_pdf(path: Path, pages: list[str]) -> None:
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    font = raw.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
    for text in pages:
        page = pdf.new_page(612, 792)
        y = 740
        for line in text.split("\n"):
            obj = raw.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 11.0)
            ws = (line + "\x00").encode("utf-16-le")
            import ctypes

            buf = (ctypes.c_ushort * (len(ws) // 2)).from_buffer_copy(ws)
            raw.FPDFText_SetText(obj, buf)
            raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 50, y)
            raw.FPDFPage_InsertObject(page.raw, obj)
            y -= 14
        raw.FPDFPage_GenerateContent(page.raw)
    raw.FPDFFont_Close(font) if font else None
    pdf.save(str(path))


def test_formats_become_ready_chunks_with_vectors(clean_db, tmp_path):
    (tmp_path / "guide.md").write_text(
        "# Install\n\n## Linux\n\n"
        + "Run the installer with apt. " * 60
        + "\n\n## Windows\n\n"
        + "Double-click setup.exe to install. " * 60
    )
    (tmp_path / "notes.txt").write_text(LOREM * 3, encoding="latin-1")
    (tmp_path / "page.html").write_text(
        "<html><body><nav>menu</nav><h1>Owls</h1><p>Owls hunt at night.</p>"
        "<script>var x=1;</script></body></html>"
    )
    _write_pdf(
        tmp_path / "paper.pdf",
        ["Page one talks about glaciers melting.", "Page two covers ocean currents and salinity."],
    )
    _queued, summary, _events = _ingest(clean_db, [tmp_path])
    rows = _doc_rows(clean_db)
    assert summary.ready == 4 and summary.failed == 0, rows
    assert {r[2] for r in rows} == {"markdown", "text", "html", "pdf"}
    assert all(r[3] == "ready" and r[5] > 0 and r[5] == r[6] for r in rows)
    with clean_db.connect() as conn:
        headings = {r[0] for r in conn.execute("SELECT heading_path FROM document_chunks")}
        pages = conn.execute(
            "SELECT c.page_number, c.text FROM document_chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE d.doc_type = 'pdf' ORDER BY c.page_number"
        ).fetchall()
        missing = conn.execute(
            "SELECT count(*) FROM document_chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_embeddings e "
            "WHERE e.chunk_id = c.id)"
        ).fetchone()[0]
    assert "Install > Linux" in headings and "Install > Windows" in headings
    assert [p for p, _ in pages] == [1, 2] and "ocean currents" in pages[1][1]
    assert missing == 0


def test_same_file_twice_is_a_no_op(clean_db, tmp_path):
    f = tmp_path / "a.md"
    f.write_text("# Title\n\n" + LOREM)
    _ingest(clean_db, [f])
    queued, summary, _ = _ingest(clean_db, [f])
    assert [e.status for e in queued] == ["skipped"] and queued[0].message == "already indexed"
    assert summary.ready == 0
    assert len(_doc_rows(clean_db)) == 1


def test_changed_file_reindexes_itself_and_reuses_unchanged_vectors(clean_db, tmp_path):
    f = tmp_path / "long.txt"
    paragraphs = [f"Paragraph {i}. " + LOREM * 2 for i in range(12)]
    f.write_text("\n\n".join(paragraphs))
    other = tmp_path / "other.md"
    other.write_text("# Other\n\nUnrelated text about trains and railways.")
    _ingest(clean_db, [f, other])
    before = {r[0]: r for r in _doc_rows(clean_db)}
    paragraphs[-1] = "Paragraph 11 was rewritten entirely: volcanoes erupt lava and ash."
    f.write_text("\n\n".join(paragraphs))
    queued, second, _ = _ingest(clean_db, [f])
    assert queued[0].status == "queued"
    rows = _doc_rows(clean_db)
    assert len(rows) == 2 and all(r[3] == "ready" for r in rows)
    other_row = next(r for r in rows if r[2] == "markdown")
    assert other_row == before[other_row[0]]  # untouched
    assert second.chunks > 0 and second.embedded_chunks < second.chunks / 2  # most vectors reused
    with clean_db.connect() as conn:
        hits = conn.execute("SELECT count(*) FROM document_chunks WHERE text LIKE '%volcanoes%'").fetchone()[
            0
        ]
    assert hits >= 1


def test_file_edited_twice_before_indexing_finishes_keeps_only_the_newest_version(clean_db, tmp_path):
    """Edits queued one after another (a watched file saved twice, or a run interrupted between saves) end as
    one ready document holding the last text, whatever order the versions finish in."""
    f = tmp_path / "notes.md"
    f.write_text("# Notes\n\nFirst draft: the meeting is on Monday.")
    _ingest(clean_db, [f])
    with Ingestor(clean_db) as ing:
        f.write_text("# Notes\n\nSecond draft: the meeting is on Wednesday.")
        ing.enqueue([f])
        f.write_text("# Notes\n\nFinal text: the meeting is on Friday at noon.")
        ing.enqueue([f])
        assert [r[3] for r in _doc_rows(clean_db)] == ["ready", "queued", "queued"]
        summary = ing.run()
    assert summary.ready == 1
    assert [e.message for e in summary.events if e.status == "removed"] == [
        "superseded by a newer version of the file"
    ]
    rows = _doc_rows(clean_db)
    assert [r[3] for r in rows] == ["ready"]
    with clean_db.connect() as conn:
        texts = [t for (t,) in conn.execute("SELECT text FROM document_chunks").fetchall()]
        postings = conn.execute("SELECT count(DISTINCT chunk_id) FROM bm25_postings").fetchone()[0]
    assert len(texts) == 1 and "Friday" in texts[0]
    assert postings == 1  # the old versions' postings went with them


def test_remove_document_removes_chunks_and_vectors(clean_db, tmp_path):
    f = tmp_path / "x.md"
    f.write_text("# X\n\n" + LOREM)
    _ingest(clean_db, [f])
    doc_id = _doc_rows(clean_db)[0][0]
    with Ingestor(clean_db) as ing:
        assert ing.remove_document(doc_id)
    with clean_db.connect() as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM document_chunks), "
            "(SELECT count(*) FROM chunk_embeddings), (SELECT count(*) FROM bm25_postings)"
        ).fetchone()
    assert counts == (0, 0, 0, 0)


def test_remove_command_removes_only_the_document_it_names(clean_db, tmp_path, capsys):
    """`local-rag remove` takes an id, a path or a file name; a name two documents share removes nothing
    and lists both, and the file itself is left alone."""
    from localrag.cli import run_cli

    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.md").write_text(f"# Notes {folder}\n\n{LOREM} Folder {folder}.")
    _ingest(clean_db, [tmp_path / "a", tmp_path / "b"])
    ids = {Path(p).parent.name: i for i, p in _paths(clean_db)}

    assert run_cli(["remove", "notes.md"]) == 1
    err = capsys.readouterr().err
    assert "several documents are notes.md" in err and str(tmp_path / "a" / "notes.md") in err
    assert len(_paths(clean_db)) == 2

    assert run_cli(["remove", str(tmp_path / "a" / "notes.md")]) == 0
    assert [i for i, _ in _paths(clean_db)] == [ids["b"]]
    assert (tmp_path / "a" / "notes.md").exists()
    found = retrieve(clean_db, "photosynthesis glucose", mode="keyword").results
    assert {r.path for r in found} == {str(tmp_path / "b" / "notes.md")}
    assert run_cli(["remove", str(ids["b"])]) == 0 and _paths(clean_db) == []
    assert run_cli(["remove", "notes.md"]) == 1 and "no document is notes.md" in capsys.readouterr().err


def _paths(library):
    with library.connect() as conn:
        return conn.execute("SELECT id, path FROM documents ORDER BY id").fetchall()


def test_bad_files_fail_alone_with_reasons(clean_db, tmp_path):
    from pypdf import PdfWriter

    folder = tmp_path / "mixed"
    folder.mkdir()
    w = PdfWriter()
    w.add_blank_page(200, 200)
    w.encrypt("secret")
    with open(folder / "locked.pdf", "wb") as fh:
        w.write(fh)
    _write_pdf(folder / "good.pdf", ["A good page about bees making honey."])
    data = (folder / "good.pdf").read_bytes()
    (folder / "truncated.pdf").write_bytes(data[: len(data) // 2])
    (folder / "empty.txt").write_bytes(b"")
    (folder / "binary.pdf").write_bytes(os.urandom(4096))
    (folder / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me and na\xefve r\xe9sum\xe9 texts.".encode("latin-1"))
    (folder / 'odd "name"; x.md').write_text("# Odd\n\nQuotes and semicolons in the name.")
    (folder / "new\nline.md").write_text("# NL\n\nA newline in the file name.")
    (folder / os.fsdecode(b"bad\xffbyte.md")).write_text("# Bytes\n\nA non-UTF-8 byte in the name.")
    (folder / "data.xyz").write_text("unknown type inside a folder")
    (tmp_path / "dropped.xyz").write_text("explicitly dropped unknown type")

    queued, _, _ = _ingest(clean_db, [folder, tmp_path / "dropped.xyz"])
    with clean_db.connect() as conn:
        by_name = conn.execute("SELECT path, status, error_code FROM documents").fetchall()
    rows = {Path(p).name: (None, None, None, status, code) for p, status, code in by_name}
    codes = {name: r[4] for name, r in rows.items() if r[3] == "failed"}
    assert codes.get("locked.pdf") == "encrypted"
    assert codes.get("truncated.pdf") == "corrupt"
    assert codes.get("binary.pdf") == "corrupt"
    assert codes.get("empty.txt") == "empty"
    assert codes.get("dropped.xyz") == "unsupported"
    ready = {t for t, r in rows.items() if r[3] == "ready"}
    assert {"good.pdf", "latin1.txt", 'odd "name"; x.md', "new\nline.md"} <= ready
    assert "bad\ufffdbyte.md" in ready  # shown readable; the exact bytes are kept to open the file
    assert "data.xyz" not in rows  # unsupported files inside a folder are skipped, not errors
    assert any(e.status == "skipped" and e.message == "unsupported type" for e in queued)
    with clean_db.connect() as conn:
        text = conn.execute("SELECT text FROM document_chunks WHERE text LIKE 'Caf%'").fetchone()[0]
    assert "Café crème" in text


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_symlink_loops_in_a_folder_are_reported_and_not_followed(clean_db, tmp_path):
    """A link to itself, a link to the folder above and a link to another folder: none is followed, each is
    reported as skipped with the reason (the window shows the same events), and the real file goes in."""
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "river.txt").write_text("Rivers carry sediment to the sea and build deltas. " * 5)
    (folder / "self.txt").symlink_to("self.txt")
    (folder / "sub" / "up").symlink_to("..")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.txt").write_text("not reached through the link")
    (folder / "sub" / "outside").symlink_to(elsewhere)
    result = subprocess.run(
        [sys.executable, "-m", "localrag", "ingest", str(folder)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    for name, why in (
        ("self.txt", "symlink loop: not followed"),
        ("up", "symlink loop: not followed"),
        ("outside", "link to a folder: not followed"),
    ):
        assert any(line.startswith("skipped") and line.endswith(f"{name}: {why}") for line in lines), lines
    assert "unsupported type" not in result.stderr
    with clean_db.connect() as conn:
        names = {Path(p).name for (p,) in conn.execute("SELECT path FROM documents")}
    assert names == {"river.txt"}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_terminated_ingest_keeps_its_work_and_the_next_run_finishes_it(clean_db, tmp_path):
    """`kill` (SIGTERM) or Ctrl+C on `local-rag ingest` stops it without cancelling anything: it says so, the
    document keeps its committed vectors, and the next run embeds only the rest."""
    f = tmp_path / "book.pdf"
    _write_pdf(f, [f"Page {i}: core sample {i * 3} was logged at the ridge." for i in range(200)])
    proc = subprocess.Popen(
        [sys.executable, "-m", "localrag", "ingest", str(f)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
        text=True,
    )
    deadline = time.monotonic() + 120
    with clean_db.connect(autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT chunks_embedded FROM documents").fetchone()
            if row and row[0] > 0:
                break
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted; what was committed is kept" in err, (
        proc.returncode,
        out,
        err,
    )
    with clean_db.connect() as conn:
        status, total, kept = conn.execute(
            "SELECT d.status, d.chunks_total, (SELECT count(*) FROM chunk_embeddings) FROM documents d"
        ).fetchone()
    assert status == "embedding" and 0 < kept < total
    _, summary, _ = _ingest(clean_db, [])
    assert summary.ready == 1 and summary.embedded_chunks == total - kept


def test_killed_ingest_resumes_to_the_same_state(clean_db, tmp_path, embedder):
    """A `local-rag ingest` killed mid-embedding resumes without redoing committed batches, and ends in the
    state an uninterrupted run produces: every chunk, each with the vector the model gives its text."""
    from localrag.core.ingest import loaders
    from localrag.core.ingest.chunking import chunk_pages

    f = tmp_path / "book.pdf"  # many short pages: many chunks that embed quickly
    _write_pdf(f, [f"Page {i}: sediment sample {i * 7} was taken near the delta." for i in range(200)])
    proc = subprocess.Popen(
        [sys.executable, "-m", "localrag", "ingest", str(f), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    deadline = time.monotonic() + 120
    embedded = 0
    with clean_db.connect(autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT chunks_embedded, chunks_total FROM documents").fetchone()
            if row and row[0] >= 64:
                embedded = row[0]
                break
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert embedded > 0
    with clean_db.connect() as conn:
        status, done, total = conn.execute(
            "SELECT status, chunks_embedded, chunks_total FROM documents"
        ).fetchone()
    assert status == "embedding" and done < total  # killed mid-way
    # Searchable all the same: by keywords, the chunks not embedded yet marked so; by meaning, those embedded.
    for mode in ("keyword", "hybrid"):
        found = retrieve(clean_db, "sediment sample 1393", k=8, mode=mode, route=False).results
        late = [r for r in found if r.page_number == 200]
        assert late and late[0].keywords_only and late[0].scores["bm25_rank"] == 1, mode
    early = retrieve(clean_db, "sediment sample 7 delta", k=3, mode="vector", route=False).results
    assert early and not any(r.keywords_only for r in early)

    resumed = subprocess.run(
        [sys.executable, "-m", "localrag", "ingest", "--json"],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=300,
    )
    summary = json.loads(resumed.stdout)
    assert resumed.returncode == 0 and summary["ready"] == 1
    assert summary["embedded_chunks"] == total - done  # committed batches were not redone
    # The summary counts what the resumed document holds, not only what this run extracted.
    assert (summary["pages"], summary["chunks"]) == (200, total)

    expected = chunk_pages(
        loaders.load(f).pages,
        embedder,
        max_tokens=clean_db.settings.chunk_tokens,
        overlap_tokens=clean_db.settings.chunk_overlap,
    )
    with clean_db.connect() as conn:
        rows = conn.execute(
            "SELECT c.chunk_index, c.text_hash, e.embedding, c.context FROM document_chunks c "
            "JOIN chunk_embeddings e ON e.chunk_id = c.id ORDER BY c.chunk_index"
        ).fetchall()
        status = conn.execute("SELECT status FROM documents").fetchone()[0]
    assert status == "ready"
    assert [(r[0], r[1]) for r in rows] == [(c.chunk_index, c.text_hash) for c in expected]
    sample = list(range(0, len(expected), max(1, len(expected) // 12)))  # every part of the run, not all
    fit = identity.ContextFitter(embedder)  # each vector is of the chunk's text in its context
    want = embedder.embed(
        [identity.embedding_text(fit(rows[i][3], expected[i].token_count), expected[i].text) for i in sample]
    )
    got = np.array([np.asarray(rows[i][2].to_list()) for i in sample])
    assert np.allclose(got, want, atol=1e-5)
    late = retrieve(clean_db, "sediment sample 1393", k=1, mode="hybrid", route=False).results
    assert late and late[0].page_number == 200 and not late[0].keywords_only
    with clean_db.connect() as conn:
        assert set(bm25.stats_drift(conn).values()) == {0}


def test_new_document_is_searchable_while_it_is_read_and_a_pause_redoes_only_the_reading(
    clean_db, tmp_path, monkeypatch
):
    """A new document's chunks are searchable by keywords as soon as they are read (committed with their
    postings as reading goes on); paused while it is read, it stays searchable, and the next run reads it
    again from the start without counting a chunk twice."""
    from localrag.core.ingest import chunk_writer, chunking

    # Commit after every chunk, and chunk pages in small groups: what a long book does, in a short test.
    monkeypatch.setattr(chunk_writer, "FIRST_COMMIT_SECONDS", 0.0)
    monkeypatch.setattr(chunk_writer, "COMMIT_SECONDS", 0.0)
    monkeypatch.setattr(chunking, "_FIRST_GROUP_CHARS", 500)
    monkeypatch.setattr(chunking, "_GROUP_CHARS", 500)
    f = tmp_path / "atlas.pdf"
    # Survey numbers no page number shares: "survey 5022" is on page 3 alone.
    _write_pdf(f, [f"Page {i}: the moraine survey {5000 + i * 11} crossed the valley." for i in range(300)])
    ing = Ingestor(clean_db)
    found: list = []

    def on_event(e):
        if e.status == "extracting" and e.searchable and 10 <= e.pages_done < e.pages and not found:
            found.extend(retrieve(clean_db, "moraine survey 5022", k=1, mode="hybrid", route=False).results)
            ing.pause()

    ing.on_event = on_event
    try:
        ing.enqueue([f])
        first = ing.run()
    finally:
        ing.close()
    assert first.ready == 0
    assert found and found[0].page_number == 3 and found[0].keywords_only
    with clean_db.connect() as conn:
        state, postings = conn.execute(
            "SELECT status, (SELECT count(*) FROM bm25_postings) FROM documents"
        ).fetchone()
        assert state == "extracting" and postings > 0
        assert set(bm25.stats_drift(conn).values()) == {0}
    _, second, _ = _ingest(clean_db, [])
    assert second.ready == 1
    with clean_db.connect() as conn:
        total, chunks = conn.execute(
            "SELECT chunks_total, (SELECT count(*) FROM document_chunks) FROM documents"
        ).fetchone()
        assert total == chunks
        assert set(bm25.stats_drift(conn).values()) == {0}
    hit = retrieve(clean_db, "moraine survey 8289", k=1, mode="hybrid", route=False).results
    assert hit and hit[0].page_number == 300 and not hit[0].keywords_only


def test_pause_keeps_committed_work_and_the_next_run_carries_on(clean_db, tmp_path):
    """Closing the app mid-document pauses: committed batches stay, nothing is marked cancelled."""
    f = tmp_path / "book.pdf"
    _write_pdf(f, [f"Page {i}: sediment sample {i * 7} was taken near the delta." for i in range(150)])
    ing = Ingestor(clean_db)
    seen = []

    def on_event(e):
        seen.append(e)
        if e.status == "embedding" and e.chunks_embedded >= 64:
            ing.pause()

    ing.on_event = on_event
    try:
        ing.enqueue([f])
        first = ing.run()
    finally:
        ing.close()
    assert first.ready == 0 and first.cancelled == 0
    with clean_db.connect() as conn:
        status, done, total = conn.execute(
            "SELECT status, chunks_embedded, chunks_total FROM documents"
        ).fetchone()
    assert status == "embedding" and 64 <= done < total
    _, second, _ = _ingest(clean_db, [])
    assert second.ready == 1 and second.embedded_chunks == total - done


def test_cancel_all_marks_the_queue_cancelled_and_reindex_is_seen_by_others(clean_db, tmp_path):
    from localrag.core.progress import CancelToken

    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\n" + LOREM)
    ing = Ingestor(clean_db)
    token = CancelToken()
    token.cancel()
    try:
        ing.enqueue([tmp_path])
        summary = ing.run(token)
    finally:
        ing.close()
    assert summary.cancelled == 3
    assert {r[3] for r in _doc_rows(clean_db)} == {"cancelled"}

    _ingest(clean_db, [tmp_path])  # re-adding cancelled files indexes them
    doc_id = _doc_rows(clean_db)[0][0]
    with Ingestor(clean_db) as ing:
        event = ing.reindex_document(doc_id)
    assert event is not None and event.status == "queued"
    with clean_db.connect() as other:  # committed: another connection sees the new row
        assert (
            other.execute("SELECT status FROM documents WHERE id = %s", (event.doc_id,)).fetchone()[0]
            == "queued"
        )


def test_ingest_of_only_bad_files_reports_them_and_stops_cleanly(tmp_path):
    """A command-line run in its own data folder whose every file fails says why, exits 1, and stops its
    database only after the embedding threads (no traceback from a model still loading)."""
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really a PDF")
    env = {**os.environ, "LOCALRAG_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "localrag", "ingest", str(broken)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "broken.pdf" in proc.stdout and "1 failed" in proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr


def test_a_pdf_whose_ligatures_came_out_as_font_codes_is_found_by_their_words(clean_db, tmp_path, embedder):
    """Ligature glyphs without a ToUnicode map come out of pdfium as their codes in the font, here those of
    TeX's T1 encoding; the same codes in a math font are no ligatures."""
    path = write_content_pdf(
        tmp_path / "survival.pdf",
        [
            [
                "BT /F1 11 Tf 14 TL 72 740 Td",
                r"(Coe\036cients of a strati\034ed model are di\033erent from the \020crude\021 ones.) Tj T*",
                r"(The e\033ect is signi\034cant, and the \034t is \034ne.) Tj T*",
                r"/F2 11 Tf (\015RX) Tj",
                "ET",
            ]
        ],
        f2="CMEX10",
    )
    _, summary, _ = _ingest(clean_db, [path])
    assert summary.ready == 1
    with clean_db.connect() as conn:
        row = conn.execute("SELECT doc_id, string_agg(text, ' ') FROM document_chunks GROUP BY 1").fetchone()
    doc_id, text = row
    assert 'Coeﬃcients of a stratiﬁed model are diﬀerent from the "crude" ones.' in text
    assert "The eﬀect is signiﬁcant, and the ﬁt is ﬁne." in text
    assert not any(broken in text for broken in ("Coe cients", "di erent", "e ect", "signi cant", "ﬂRX"))
    for query in ("coefficients", "different", "stratified effect", "significant fit", "crude"):
        results = retrieve(clean_db, query, k=3, mode="keyword").results
        assert [(r.doc_id, r.page_number) for r in results] == [(doc_id, 1)], query
    # The embedding model reads the ligatures as letters; its offsets still point into the text as stored.
    encoding = embedder.tokenizer.encode(text)
    assert "Coeﬃcients" in [text[start:end] for start, end in encoding.offsets]
    stored, spelled = embedder.embed([text, glyphs.letters(text)])
    assert float(stored @ spelled) > 0.9999
