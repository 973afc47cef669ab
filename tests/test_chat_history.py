"""Chat history in PostgreSQL: chats listed, renamed, deleted; answers keep their sources; a restart keeps
all."""

from __future__ import annotations

from localrag.core.answer import history
from localrag.core.answer.citations import Source


def _source(n: int, cited: bool) -> Source:
    return Source(
        number=n,
        doc_id=7,
        title="Manual",
        path="/docs/manual.pdf",
        doc_type="pdf",
        page_number=3 + n,
        heading_path="Install > Windows",
        chunk_ids=[40 + n, 41 + n],
        score=0.71,
        char_start=10,
        char_end=90,
        text="Double-click the installer.",
        cited=cited,
    )


def test_chats_are_created_listed_renamed_and_deleted(clean_db):
    with clean_db.connect() as conn:
        a = history.create_chat(
            conn, history.title_from("How do I install it on Windows and what do I need?")
        )
        b = history.create_chat(conn)
        assert (
            a.title.startswith("How do I install it on Windows") and len(a.title) <= history.TITLE_CHARS + 1
        )
        assert b.title == history.DEFAULT_TITLE
        history.add_message(conn, a.id, "user", "hello")
        chats = history.list_chats(conn)
        assert [c.id for c in chats] == [a.id, b.id]  # the active one first
        assert chats[0].message_count == 1
        assert history.rename_chat(conn, b.id, "  Backups  ")
        assert history.get_chat(conn, b.id).title == "Backups"
        assert history.delete_chat(conn, a.id)
        assert not history.delete_chat(conn, a.id)
        assert history.load_messages(conn, a.id) == []
        assert [c.id for c in history.list_chats(conn)] == [b.id]
        assert history.get_chat(conn, a.id) is None


def test_an_answer_keeps_its_sources_chunks_and_timings(clean_db):
    with clean_db.connect() as conn:
        chat = history.create_chat(conn, "t")
        sources = [_source(1, True), _source(2, False)]
        q, a = history.add_exchange(
            conn,
            chat.id,
            "How?",
            "Double-click it [1].",
            grounded=True,
            strict=True,
            chunk_ids=[41, 42],
            sources=sources,
            timings={"ttft_s": 1.2, "notice": "n", "cancelled": True},
        )
        assert a == q + 1
        messages = history.load_messages(conn, chat.id)
        assert [m.role for m in messages] == ["user", "assistant"]
        answer = messages[1]
        assert answer.sources == sources and answer.chunk_ids == [41, 42]
        assert answer.grounded and answer.strict and answer.notice == "n" and answer.cancelled
        assert answer.timings["ttft_s"] == 1.2
        assert history.recent_questions(conn, chat.id) == ["How?"]
        assert [m.id for m in history.load_messages(conn, chat.id, last=1)] == [a]


def test_history_survives_a_restart(tmp_path, monkeypatch):
    from localrag.core.config import Settings
    from localrag.core.library import Library

    monkeypatch.setenv("LOCALRAG_HOME", str(tmp_path / "home"))
    first = Library(Settings.load())
    first.open()
    try:
        with first.connect() as conn:
            chat = history.create_chat(conn, "Kept")
            history.add_exchange(
                conn,
                chat.id,
                "Where is it?",
                "On page 4 [1].",
                grounded=True,
                strict=False,
                chunk_ids=[41, 42],
                sources=[_source(1, True)],
                timings={"ttft_s": 0.5},
            )
    finally:
        first.close()  # stops the embedded server
    again = Library(Settings.load())
    again.open()
    try:
        with again.connect() as conn:
            assert [c.title for c in history.list_chats(conn)] == ["Kept"]
            answer = history.load_messages(conn, chat.id)[1]
            assert answer.content == "On page 4 [1]." and answer.sources == [_source(1, True)]
    finally:
        again.close()
