"""Chats and their messages in PostgreSQL (tables ``chats`` and ``messages``, migration 0001).

A chat is scoped to a collection or to every document (``Chat.collection_id``, migration 0011); when its
collection is deleted it falls back to every document and ``scope_note`` says so until its scope is set again.

Every function takes an open connection and commits its own change (the caller owns the connection; one per
thread). An assistant message keeps what its answer rests on: ``grounded``/``strict``, the ids of the chunks
it cited (``chunk_ids``), its numbered sources (``sources``, JSON, each marked ``cited`` or not) and
``timings`` (seconds, plus ``notice`` — why the answer is not grounded — and ``cancelled`` when it was
stopped).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from localrag.core.answer.citations import Source
from localrag.core.errors import KnownError

log = logging.getLogger("localrag.chat.history")

DEFAULT_TITLE = "New chat"
TITLE_CHARS = 60


@dataclass
class Chat:
    id: int
    title: str
    created_at: datetime
    updated_at: datetime
    message_count: int = 0
    collection_id: int | None = None
    collection_name: str = ""
    scope_note: str = ""  # why the scope changed by itself (its collection was deleted)


@dataclass
class Message:
    """A stored message; for an answer, ``sources`` restores its sources list and links."""

    id: int
    chat_id: int
    role: str
    content: str
    grounded: bool = False
    strict: bool = False
    chunk_ids: list[int] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    timings: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    parts: dict[str, Any] | None = None  # lead, evidence and checked generated sentences (see engine.Done)

    @property
    def notice(self) -> str:
        return str(self.timings.get("notice") or "")

    @property
    def cancelled(self) -> bool:
        return bool(self.timings.get("cancelled"))


def title_from(question: str) -> str:
    """A chat title from its first question: the first line, cut at a word near ``TITLE_CHARS``."""
    line = " ".join(question.split())
    if len(line) <= TITLE_CHARS:
        return line or DEFAULT_TITLE
    cut = line[:TITLE_CHARS].rsplit(" ", 1)[0]
    return (cut or line[:TITLE_CHARS]) + "…"


def create_chat(
    conn: psycopg.Connection[Any], title: str = DEFAULT_TITLE, collection_id: int | None = None
) -> Chat:
    row = conn.execute(
        "INSERT INTO chats (title, collection_id) VALUES (%s, %s) RETURNING id",
        (title.strip() or DEFAULT_TITLE, collection_id),
    ).fetchone()
    conn.commit()
    assert row is not None
    chat = get_chat(conn, int(row[0]))
    assert chat is not None
    return chat


_CHAT = (
    "SELECT c.id, c.title, c.created_at, c.updated_at,"
    " (SELECT count(*) FROM messages m WHERE m.chat_id = c.id), c.collection_id, coalesce(k.name, ''),"
    " c.scope_note FROM chats c LEFT JOIN collections k ON k.id = c.collection_id"
)


def list_chats(conn: psycopg.Connection[Any]) -> list[Chat]:
    """All chats, the most recently active first."""
    rows = conn.execute(_CHAT + " ORDER BY c.updated_at DESC, c.id DESC").fetchall()
    return [Chat(*r) for r in rows]


def get_chat(conn: psycopg.Connection[Any], chat_id: int) -> Chat | None:
    row = conn.execute(_CHAT + " WHERE c.id = %s", (chat_id,)).fetchone()
    return Chat(*row) if row else None


def set_chat_collection(conn: psycopg.Connection[Any], chat_id: int, collection_id: int | None) -> bool:
    """Scope a chat to a collection (``None``: every document); clears its scope note. False: no such chat.

    Raises:
        KnownError: the collection was deleted meanwhile.
    """
    try:
        cur = conn.execute(
            "UPDATE chats SET collection_id = %s, scope_note = '' WHERE id = %s", (collection_id, chat_id)
        )
    except psycopg.errors.ForeignKeyViolation:
        conn.rollback()
        raise KnownError("That collection was deleted meanwhile: the chat keeps its scope.") from None
    conn.commit()
    return cur.rowcount > 0


def rename_chat(conn: psycopg.Connection[Any], chat_id: int, title: str) -> bool:
    """Returns False when there is no such chat."""
    cur = conn.execute(
        "UPDATE chats SET title = %s WHERE id = %s", ((title.strip() or DEFAULT_TITLE)[:200], chat_id)
    )
    conn.commit()
    return cur.rowcount > 0


def delete_chat(conn: psycopg.Connection[Any], chat_id: int) -> bool:
    """Delete a chat and its messages; returns False when there is no such chat."""
    cur = conn.execute("DELETE FROM chats WHERE id = %s", (chat_id,))
    conn.commit()
    return cur.rowcount > 0


def add_message(
    conn: psycopg.Connection[Any],
    chat_id: int,
    role: str,
    content: str,
    *,
    grounded: bool = False,
    strict: bool = False,
    chunk_ids: Sequence[int] = (),
    sources: Sequence[Source] = (),
    timings: dict[str, Any] | None = None,
    parts: dict[str, Any] | None = None,
    commit: bool = True,
) -> int:
    """Append a message and touch the chat's ``updated_at``; returns the message id."""
    row = conn.execute(
        "INSERT INTO messages (chat_id, role, content, grounded, strict, chunk_ids, sources, timings, parts)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (
            chat_id,
            role,
            content,
            grounded,
            strict,
            list(chunk_ids),
            Jsonb([s.to_dict() for s in sources]),
            Jsonb(timings or {}),
            Jsonb(parts) if parts else None,
        ),
    ).fetchone()
    conn.execute("UPDATE chats SET updated_at = now() WHERE id = %s", (chat_id,))
    if commit:
        conn.commit()
    assert row is not None
    return int(row[0])


def add_exchange(
    conn: psycopg.Connection[Any],
    chat_id: int,
    question: str,
    answer: str,
    *,
    grounded: bool,
    strict: bool,
    chunk_ids: Sequence[int],
    sources: Sequence[Source],
    timings: dict[str, Any],
    parts: dict[str, Any] | None = None,
) -> tuple[int, int]:
    """Store a question and its answer together (one transaction); returns both message ids."""
    with conn.transaction():
        q = add_message(conn, chat_id, "user", question, grounded=grounded, strict=strict, commit=False)
        a = add_message(
            conn,
            chat_id,
            "assistant",
            answer,
            grounded=grounded,
            strict=strict,
            chunk_ids=chunk_ids,
            sources=sources,
            timings=timings,
            parts=parts,
            commit=False,
        )
    if not conn.autocommit:
        conn.commit()
    return q, a


def load_messages(conn: psycopg.Connection[Any], chat_id: int, *, last: int | None = None) -> list[Message]:
    """The chat's messages in order (only the ``last`` ones when given), with their sources restored."""
    sql = (
        "SELECT id, chat_id, role, content, grounded, strict, chunk_ids, sources, timings, created_at, parts"
        " FROM messages WHERE chat_id = %s ORDER BY id"
    )
    params: tuple[Any, ...] = (chat_id,)
    if last is not None:
        sql = f"SELECT * FROM ({sql} DESC LIMIT %s) m ORDER BY id"
        params = (chat_id, last)
    rows = conn.execute(sql, params).fetchall()
    return [
        Message(
            id=r[0],
            chat_id=r[1],
            role=r[2],
            content=r[3],
            grounded=r[4],
            strict=r[5],
            chunk_ids=[int(c) for c in r[6] or []],
            sources=[Source.from_dict(s) for s in (r[7] or []) if isinstance(s, dict)],
            timings=dict(r[8] or {}),
            created_at=r[9],
            parts=dict(r[10]) if isinstance(r[10], dict) else None,
        )
        for r in rows
    ]


def recent_questions(conn: psycopg.Connection[Any], chat_id: int, n: int = 2) -> list[str]:
    """The chat's last ``n`` questions, oldest first."""
    rows = conn.execute(
        "SELECT content FROM messages WHERE chat_id = %s AND role = 'user' ORDER BY id DESC LIMIT %s",
        (chat_id, n),
    ).fetchall()
    return [r[0] for r in reversed(rows)]
