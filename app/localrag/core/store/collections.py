"""Collections: named sets of documents (tables ``collections`` and ``collection_documents``, migration 0011).

A document can be in several collections; a chat, a search, an answer and an evaluation can be scoped to one
(``Filters.collection_id``). They live in the database, so every computer sharing a library shares them.
Every function takes an open connection and commits its own change. Names are unique whatever their case.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from localrag.core.errors import KnownError

NAME_CHARS = 80


class CollectionError(KnownError):
    """A collection that cannot be made, found or changed as asked (the message says why)."""

    code = "collection"


@dataclass(frozen=True)
class Collection:
    """One collection; ``documents`` counts its documents that can be searched (ready)."""

    id: int
    name: str
    documents: int = 0
    created_at: datetime | None = None


_SELECT = (
    "SELECT c.id, c.name, (SELECT count(*) FROM collection_documents cd"
    " JOIN documents d ON d.id = cd.document_id WHERE cd.collection_id = c.id AND d.status = 'ready'),"
    " c.created_at FROM collections c"
)


def list_collections(conn: psycopg.Connection[Any]) -> list[Collection]:
    """Every collection, by name."""
    return [Collection(*r) for r in conn.execute(_SELECT + " ORDER BY lower(c.name), c.id").fetchall()]


def get_collection(conn: psycopg.Connection[Any], collection_id: int) -> Collection:
    row = conn.execute(_SELECT + " WHERE c.id = %s", (int(collection_id),)).fetchone()
    if row is None:
        raise CollectionError(f"There is no collection #{collection_id} (it may have been deleted).")
    return Collection(*row)


def find_collection(conn: psycopg.Connection[Any], name: str) -> Collection:
    """The collection called ``name`` (any case), or numbered ``name`` (``"3"`` or ``"#3"``).

    Raises:
        CollectionError: none is called so; the message lists the names there are.
    """
    wanted = " ".join(str(name).split())
    row = conn.execute(_SELECT + " WHERE lower(c.name) = lower(%s)", (wanted,)).fetchone()
    if row is not None:
        return Collection(*row)
    if wanted.lstrip("#").isdigit():
        return get_collection(conn, int(wanted.lstrip("#")))
    names = [c.name for c in list_collections(conn)]
    there = f" Collections: {', '.join(names)}." if names else " There are no collections yet."
    raise CollectionError(f"There is no collection named “{wanted}”.{there}")


def _clean(name: str) -> str:
    cleaned = " ".join(str(name or "").split())
    if not cleaned:
        raise CollectionError("A collection needs a name.")
    if len(cleaned) > NAME_CHARS:
        raise CollectionError(f"A collection's name is at most {NAME_CHARS} characters long.")
    return cleaned


def _taken(name: str) -> CollectionError:
    return CollectionError(f"A collection named “{name}” already exists; choose another name.")


def create_collection(conn: psycopg.Connection[Any], name: str) -> Collection:
    """Raises ``CollectionError`` for an empty name or one already taken (whatever its case)."""
    cleaned = _clean(name)
    try:
        row = conn.execute(
            "INSERT INTO collections (name) VALUES (%s) RETURNING id, name, 0, created_at", (cleaned,)
        ).fetchone()
    except psycopg.errors.UniqueViolation:
        conn.rollback()
        raise _taken(cleaned) from None
    conn.commit()
    assert row is not None
    return Collection(*row)


def rename_collection(conn: psycopg.Connection[Any], collection_id: int, name: str) -> Collection:
    cleaned = _clean(name)
    try:
        cur = conn.execute(
            "UPDATE collections SET name = %s, updated_at = now() WHERE id = %s", (cleaned, collection_id)
        )
    except psycopg.errors.UniqueViolation:
        conn.rollback()
        raise _taken(cleaned) from None
    conn.commit()
    if cur.rowcount == 0:
        raise CollectionError(f"There is no collection #{collection_id} (it may have been deleted).")
    return get_collection(conn, collection_id)


def delete_collection(conn: psycopg.Connection[Any], collection_id: int) -> list[int]:
    """Delete a collection (its documents stay in the library). The chats scoped to it fall back to every
    document and keep a note saying so; returns their ids."""
    with conn.transaction():
        found = conn.execute("SELECT name FROM collections WHERE id = %s", (collection_id,)).fetchone()
        if found is None:
            raise CollectionError(f"There is no collection #{collection_id} (it may have been deleted).")
        note = f"The collection “{found[0]}” was deleted: this chat now searches all documents."
        chats = conn.execute(
            "UPDATE chats SET collection_id = NULL, scope_note = %s WHERE collection_id = %s RETURNING id",
            (note, collection_id),
        ).fetchall()
        conn.execute("DELETE FROM collections WHERE id = %s", (collection_id,))
    if not conn.autocommit:
        conn.commit()
    return [int(r[0]) for r in chats]


def add_documents(conn: psycopg.Connection[Any], collection_id: int, doc_ids: Iterable[int]) -> int:
    """Put documents in the collection; returns how many were not in it yet (unknown ids are skipped)."""
    get_collection(conn, collection_id)
    cur = conn.execute(
        "INSERT INTO collection_documents (collection_id, document_id)"
        " SELECT %s, d.id FROM documents d WHERE d.id = ANY(%s) ON CONFLICT DO NOTHING",
        (collection_id, [int(d) for d in doc_ids]),
    )
    conn.execute("UPDATE collections SET updated_at = now() WHERE id = %s", (collection_id,))
    conn.commit()
    return cur.rowcount


def documents_at(conn: psycopg.Connection[Any], paths: Iterable[str]) -> list[int]:
    """The library's documents whose file is one of ``paths`` or in one of them (a folder, and below it);
    current versions only."""
    found: list[int] = []
    for path in paths:
        base = os.path.abspath(os.path.expanduser(path)).rstrip("/\\")
        like = base.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_")
        rows = conn.execute(
            "SELECT d.id FROM documents d WHERE (d.path = %s OR d.path LIKE %s OR d.path LIKE %s)"
            " AND NOT EXISTS (SELECT 1 FROM documents n WHERE n.replaces_id = d.id AND n.status = 'ready')",
            (base, like + "/%", like + "\\\\%"),
        ).fetchall()
        found += [int(r[0]) for r in rows]
    return found


def remove_documents(conn: psycopg.Connection[Any], collection_id: int, doc_ids: Iterable[int]) -> int:
    """Take documents out of the collection (not out of the library); returns how many were in it."""
    cur = conn.execute(
        "DELETE FROM collection_documents WHERE collection_id = %s AND document_id = ANY(%s)",
        (collection_id, [int(d) for d in doc_ids]),
    )
    conn.commit()
    return cur.rowcount


def document_ids(conn: psycopg.Connection[Any], collection_id: int) -> list[int]:
    """Every document of the collection, whatever its status, in the order they were added."""
    rows = conn.execute(
        "SELECT document_id FROM collection_documents WHERE collection_id = %s"
        " ORDER BY added_at, document_id",
        (collection_id,),
    ).fetchall()
    return [int(r[0]) for r in rows]
