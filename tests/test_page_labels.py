"""Citations name the number a page prints (its PDF page label) and the page's place in the file."""

from __future__ import annotations

from pathlib import Path

from pypdf import PdfReader, PdfWriter

from fixtures_docs import write_pdf
from localrag.core.answer.citations import Source, page_phrase
from localrag.core.ingest import metadata
from localrag.core.ingest.pipeline import Ingestor
from localrag.core.retrieve import packing, retrieve
from localrag.gui.views.source_ref import SourceRef
from localrag.gui.views.transcript import source_line

TOPICS = [
    "Preface of the handbook and how to read it.",
    "Contents of the handbook listed chapter by chapter.",
    "Glaciers carve valleys as they move slowly downhill.",
    "Volcanoes release magma through vents in the crust.",
    "Mangrove forests shelter juvenile fish along tropical coasts.",
    "Coral reefs bleach when the water grows too warm.",
]


def _pages(words: str) -> list[list[str]]:
    return [[f"{words} {topic}", f"More about it: {topic}"] for topic in TOPICS]


def _labelled_pdf(path: Path) -> Path:
    """Six pages: two front pages numbered i, ii, then the body numbered from 1 (the 5th page prints "3")."""
    plain = write_pdf(path.with_name("plain-" + path.name), _pages("Labelled"))
    writer = PdfWriter(clone_from=PdfReader(str(plain)))
    writer.set_page_label(0, 1, style="/r")
    writer.set_page_label(2, 5, style="/D", start=1)
    with open(path, "wb") as f:
        writer.write(f)
    plain.unlink()
    return path


def _ingest(library, paths: list[Path]) -> None:
    with Ingestor(library) as ing:
        ing.enqueue(paths)
        ing.run()


def test_page_phrase():
    assert page_phrase(39, "33") == "p. 33 (PDF page 39)"
    assert page_phrase(39, "") == "p. 39"
    assert page_phrase(39, "39") == "p. 39"
    assert page_phrase(2, "ii", "page") == "page ii (PDF page 2)"


def test_labels_read_from_the_pdf(tmp_path):
    path = _labelled_pdf(tmp_path / "handbook.pdf")
    assert metadata.pdf_page_labels(path) == {"1": "i", "2": "ii", "3": "1", "4": "2", "5": "3", "6": "4"}
    plain = write_pdf(tmp_path / "plain.pdf", _pages("Plain"))
    assert metadata.pdf_page_labels(plain) == {}


def test_citations_name_the_printed_page_and_the_pdf_page(clean_db, tmp_path):
    library = clean_db
    labelled = _labelled_pdf(tmp_path / "handbook.pdf")
    plain = write_pdf(tmp_path / "atlas.pdf", _pages("Atlas"))
    _ingest(library, [labelled, plain])

    resp = retrieve(library, "Labelled mangrove forests shelter juvenile fish", k=3)
    top = resp.results[0]
    assert top.path.endswith("handbook.pdf") and top.page_number == 5
    assert top.page_label == "3"
    data = top.to_dict()
    assert data["page_number"] == 5 and data["page_label"] == "3"

    assert packing.source_header(1, top).startswith("[1] handbook, p. 3 (PDF page 5)")  # what the model reads
    source = Source.from_result(1, top)
    assert "p. 3 (PDF page 5)" in source.where()
    restored = Source.from_dict(source.to_dict())
    assert restored.page_label == "3" and "p. 3 (PDF page 5)" in restored.where()
    old = {k: v for k, v in source.to_dict().items() if k != "page_label"}  # a message saved before labels
    assert "p. 5" in Source.from_dict(old).where()

    ref = SourceRef.from_source(source, 1)
    assert ref.page_number == 5  # the viewer opens the page by its place in the file
    assert "p.&nbsp;3 (PDF page 5)" in source_line(1, ref, 0, "#888")

    resp = retrieve(library, "Atlas mangrove forests shelter juvenile fish", k=3)
    top = resp.results[0]
    assert top.path.endswith("atlas.pdf") and top.page_number == 5 and top.page_label == ""
    where = Source.from_result(1, top).where()
    assert "p. 5" in where and "PDF page" not in where


def test_refreshing_metadata_keeps_the_labels(clean_db, tmp_path):
    library = clean_db
    _ingest(library, [_labelled_pdf(tmp_path / "handbook.pdf")])
    with library.connect() as conn:
        doc_id = conn.execute("SELECT id FROM documents").fetchone()[0]
        metadata.edit(conn, doc_id, {"organization": "Geo Society"})
        meta = metadata.document_meta(conn, doc_id)
    assert meta is not None and meta["page_labels"]["5"] == "3"
