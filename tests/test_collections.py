"""Collections and chat export, on the real store, embedding model and GGUF: a collection's CRUD and its clear
errors, a search and an answer scoped to it (only its documents come back), a chat that keeps its scope and
falls back when the collection goes, a re-indexed file that stays in its collections, and a chat exported to
Markdown, HTML and PDF with its quoted sentences, pages and page links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from fixtures_chat import index
from fixtures_docs import write_pdf
from localrag.core.answer import compare, export, history
from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import Done
from localrag.core.answer.request import AskRequest
from localrag.core.config import Settings
from localrag.core.llm.llm import load_llm
from localrag.core.retrieve import retrieve
from localrag.core.store.collections import CollectionError

REPORT_PAGES = [
    ["Annual report of the Northwind cooperative.", "Prepared by the board for its members."],
    ["Contents: overview, results, outlook."],
    ["Overview. The cooperative delivered bread to 42 villages.", "Membership grew to 1,850 households."],
    ["Results. Revenue reached 3.2 million euros in 2022, up 8 percent.", "A bakery opened in Tarn."],
]
MANUAL = (
    "# Mill shop handbook\n\nRevenue of the mill shop reached 9.7 million euros in 2022.\n\n"
    "Clean the mill stones every six months.\n"
)
QUESTION = "What revenue was reached in 2022?"


def _labelled_report(path: Path) -> Path:
    """Four pages printed i, ii, 1, 2: the results page is "p. 2 (PDF page 4)"."""
    plain = write_pdf(path.with_name("plain-" + path.name), REPORT_PAGES)
    writer = PdfWriter(clone_from=PdfReader(str(plain)))
    writer.set_page_label(0, 1, style="/r")
    writer.set_page_label(2, 3, style="/D", start=1)
    with open(path, "wb") as f:
        writer.write(f)
    plain.unlink()
    return path


@pytest.fixture(scope="module")
def corpus(library, tmp_path_factory):
    root = tmp_path_factory.mktemp("collections")
    (root / "reports").mkdir()
    (root / "manuals").mkdir()
    _labelled_report(root / "reports" / "northwind.pdf")
    (root / "manuals" / "mill-shop.md").write_text(MANUAL, encoding="utf-8")
    index(library, [root / "reports", root / "manuals"], ready=2)
    return root


def _ids_by_name(library) -> dict[str, int]:
    with library.connect() as conn:
        rows = conn.execute("SELECT id, path FROM documents WHERE status = 'ready'").fetchall()
    return {Path(p).name: int(i) for i, p in rows}


def test_collections_crud_scope_and_fallback(library, corpus):
    docs = _ids_by_name(library)
    reports = library.create_collection("  Reports ")
    assert reports.name == "Reports"
    with pytest.raises(CollectionError, match="already exists"):
        library.create_collection("reports")
    with pytest.raises(CollectionError, match="needs a name"):
        library.create_collection("   ")
    assert library.add_to_collection(reports.id, paths=[str(corpus / "reports")]) == 1
    assert library.add_to_collection(reports.id, [docs["northwind.pdf"]]) == 0  # in it already
    both = library.create_collection("Everything")
    assert library.add_to_collection(both.id, list(docs.values())) == 2  # a document can be in several
    renamed = library.rename_collection(reports.id, "Annual reports")
    assert library.collection("annual REPORTS").id == reports.id and renamed.documents == 1
    with pytest.raises(CollectionError, match="“everything” already exists"):  # a rename onto a taken name
        library.rename_collection(reports.id, "everything")
    with pytest.raises(CollectionError, match=r"no collection named “Nope”\. Collections: Annual reports"):
        library.collection("Nope")

    # what a question comparing sides may call them by: each document, and each collection with its documents
    names = {(n.kind, n.label): sorted(n.doc_ids) for n in compare.names_of(library)}
    assert names[("collection", "Annual reports")] == [docs["northwind.pdf"]]
    assert names[("collection", "Everything")] == sorted(docs.values())
    assert sum(kind == "document" for kind, _ in names) == 2

    scoped = retrieve(library, QUESTION, collection=reports.id, route=False)
    everywhere = retrieve(library, QUESTION, route=False)
    assert scoped.results and {r.doc_id for r in scoped.results} == {docs["northwind.pdf"]}
    assert docs["mill-shop.md"] in {r.doc_id for r in everywhere.results}  # the scope is what leaves it out

    with library.connect() as conn:
        chat = history.create_chat(conn, "Scoped", reports.id)
        assert (chat.collection_id, chat.collection_name) == (reports.id, "Annual reports")
    assert library.delete_collection(reports.id) == [chat.id]
    with library.connect() as conn:
        after = history.get_chat(conn, chat.id)
    assert after is not None and after.collection_id is None
    assert "“Annual reports” was deleted" in after.scope_note
    assert [c.name for c in library.collections()] == ["Everything"]
    assert len(library.collection_documents(both.id)) == 2  # deleting one collection leaves the others


def test_a_reindexed_file_stays_in_its_collections(library, corpus):
    manual = corpus / "manuals" / "mill-shop.md"
    docs = _ids_by_name(library)
    shop = library.create_collection("Shop")
    library.add_to_collection(shop.id, [docs[manual.name]])
    manual.write_text(MANUAL + "\nThe shop opens at eight.\n", encoding="utf-8")
    index(library, [manual], empty=False)
    new_id = _ids_by_name(library)[manual.name]
    assert new_id != docs[manual.name]
    assert library.collection_documents(shop.id) == [new_id]


def test_scoped_answer_is_kept_with_its_chat_and_exported_with_pages_and_links(
    library, corpus, qapp, tmp_path
):
    docs = _ids_by_name(library)
    reports = library.create_collection("Reports only")
    library.add_to_collection(reports.id, paths=[str(corpus / "reports")])
    engine = ChatEngine(library, load_llm(Settings(n_ctx=2048)))
    events = list(engine.ask(AskRequest(QUESTION, collection_id=reports.id, max_tokens=24)))
    done = events[-1]
    assert isinstance(done, Done), events[-1]
    assert done.sources and {s.doc_id for s in done.sources} == {docs["northwind.pdf"]}
    assert done.evidence is not None and done.evidence.spans
    with library.connect() as conn:
        chat = history.get_chat(conn, done.chat_id)
        assert chat is not None and chat.collection_id == reports.id  # the scope is kept with the chat
        _, md = export.export_chat(conn, chat.id, "md")
        _, html = export.export_chat(conn, chat.id, "html")

    span = done.evidence.spans[0]
    link = f"file://{span.path}#page={span.page_number}"
    assert span.page_number == 4 and span.page_label == "2"
    assert f"## 1. {QUESTION}" in md and "Scope: the collection “Reports only”" in md
    assert f"(<{link}>)" in md and "northwind, p. 2 (PDF page 4)" in md
    assert "3.2 million euros" in md and "Sources" in md
    assert f'href="{link}"' in html and "p. 2 (PDF page 4)" in html and "<style>" in html
    assert "<script" not in html and 'src="' not in html  # one file: nothing to fetch
    for g in done.generated:  # each shown generated sentence carries its check mark
        if g.supported:
            assert re.search(r"✓ .*" + re.escape(g.text.strip()[:20]), md)

    from localrag.gui.views.export_chat import export_chat

    pdf = export_chat(library, chat.id, tmp_path / "chat.pdf", "pdf")
    reader = PdfReader(str(pdf))
    text = "".join(page.extract_text() for page in reader.pages)
    uris = [
        a.get_object()["/A"]["/URI"]
        for page in reader.pages
        for a in page.get("/Annots") or []
        if "/A" in a.get_object()
    ]
    assert QUESTION in " ".join(text.split()) and link in uris


def test_window_collections_scope_the_chat_and_say_what_went_wrong(library, corpus, qtbot, monkeypatch):
    """The collections list and the chat panel as the window wires them (``window_collections``): picking,
    adding, a duplicate name, a chat opened in its collection, and a deletion that leaves the chat on all
    documents."""
    from localrag.gui import window_collections
    from localrag.gui.views.chat import ChatPanel
    from localrag.gui.views.collections import CollectionsPanel

    docs = _ids_by_name(library)
    shop = library.create_collection("Shop floor")
    with library.connect() as conn:
        chat_id = history.create_chat(conn, "About the shop", shop.id).id
    panel = CollectionsPanel(library)
    chat = ChatPanel(library)
    qtbot.addWidget(panel)
    qtbot.addWidget(chat)
    chat.collection_loaded.connect(panel.select)
    status: list[str] = []
    panel.chosen.connect(lambda c, _ids: chat.set_collection(c.id if c else None, c.name if c else ""))
    panel.deleted.connect(lambda *args: window_collections.fall_back(chat, status.append, *args))
    panel.refresh()
    qtbot.waitUntil(lambda: panel.list.count() == 1 + len(library.collections()))

    with qtbot.waitSignal(panel.chosen) as picked:  # opening the chat picks its collection
        chat.open_chat(chat_id)
    assert picked.args[0].id == shop.id and picked.args[1] == []
    assert "Scope: collection “Shop floor”" in chat.scope_label.text()

    with qtbot.waitSignal(panel.chosen) as refilled:  # what joins the collection picked shows at once
        panel.add(shop.id, [docs["mill-shop.md"]])
    assert refilled.args[1] == [docs["mill-shop.md"]]

    with qtbot.waitSignal(panel.message) as said:
        panel.create_collection("shop FLOOR")
    assert "already exists" in said.args[0] and panel.error_label.isVisibleTo(panel)

    # The Delete key on the list asks first (the question is answered Yes here, the only stand-in).
    from localrag.gui.qt import QtCore, QtWidgets

    yes = QtWidgets.QMessageBox.StandardButton.Yes
    monkeypatch.setattr(QtWidgets.QMessageBox, "question", lambda *_a, **_k: yes)
    panel.show()
    panel.activateWindow()
    panel.list.setFocus()
    qtbot.waitUntil(panel.list.hasFocus)
    with qtbot.waitSignal(panel.deleted) as deleted:
        qtbot.keyClick(panel.list, QtCore.Qt.Key.Key_Delete)
    assert deleted.args[2] == [chat_id]
    qtbot.waitUntil(lambda: panel.current is None)
    assert "its collection was deleted" in chat.scope_label.text()
    assert "“Shop floor” was deleted" in chat.scope_label.toolTip()
    assert status == ["Collection “Shop floor” deleted. 1 chat scoped to it now searches all documents."]
    with library.connect() as conn:
        kept = history.get_chat(conn, chat_id)
    assert kept is not None and kept.collection_id is None and "“Shop floor” was deleted" in kept.scope_note
    chat.shutdown()
