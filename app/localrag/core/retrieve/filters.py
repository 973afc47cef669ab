"""Which documents a query may return: ids, types, a collection, a path pattern and an added-between range,
all ANDed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

DateLike = dt.datetime | dt.date | str


def searchable(doc: str = "d") -> str:
    """SQL: whether the document ``doc`` may be returned by a search. A ready one; and a new one (not the next
    version of a ready document, which answers until then) from the moment its first pages are read: its
    postings are written as its text is read, its vectors as they are embedded. A chunk of it that has no
    vector yet is found by keywords only."""
    return (
        f"({doc}.status = 'ready' OR ({doc}.status IN ('extracting', 'embedding') "
        f"AND {doc}.replaces_id IS NULL))"
    )


@dataclass(frozen=True)
class Filters:
    """Restrictions on documents; each one left ``None`` does not restrict.

    Attributes:
        doc_ids: only these documents.
        doc_types: only these types (``pdf``, ``markdown``, ``text``, ``html``, ``docx``, ``image``).
        path_glob: a shell pattern (``*``, ``?``; case-insensitive). Without a ``/`` or ``\\`` it is matched
            against the file name (``*.pdf``, ``report*``); with one, against the whole path.
        collection_id: only the documents of this collection (``core/store/collections.py``).
        added_after / added_before: when the document was added (``documents.created_at``), inclusive after,
            exclusive before. Dates, datetimes or ISO strings; naive values are taken as UTC.
    """

    doc_ids: tuple[int, ...] | None = None
    doc_types: tuple[str, ...] | None = None
    path_glob: str | None = None
    added_after: dt.datetime | None = None
    added_before: dt.datetime | None = None
    collection_id: int | None = None

    @classmethod
    def build(
        cls,
        doc_ids: Iterable[int] | None = None,
        doc_types: Iterable[str] | str | None = None,
        path_glob: str | None = None,
        added_after: DateLike | None = None,
        added_before: DateLike | None = None,
        collection_id: int | None = None,
    ) -> Filters:
        if isinstance(doc_types, str):
            doc_types = [doc_types]
        return cls(
            doc_ids=tuple(int(d) for d in doc_ids) if doc_ids is not None else None,
            doc_types=tuple(t.lower() for t in doc_types) if doc_types is not None else None,
            path_glob=path_glob or None,
            added_after=_to_datetime(added_after),
            added_before=_to_datetime(added_before),
            collection_id=int(collection_id) if collection_id is not None else None,
        )

    @property
    def only_documents(self) -> bool:
        """Whether the filter restricts to some documents and nothing else."""
        return self.doc_ids is not None and not any(
            v is not None for v in (self.doc_types, self.path_glob, self.added_after, self.added_before)
        )

    @property
    def active(self) -> bool:
        return any(
            v is not None
            for v in (
                self.doc_ids,
                self.doc_types,
                self.path_glob,
                self.added_after,
                self.added_before,
                self.collection_id,
            )
        )

    def sql(self, doc: str = "d") -> tuple[str, dict[str, Any]]:
        """A condition on the ``documents`` alias ``doc`` (always ``searchable``) and its parameters."""
        clauses = [searchable(doc)]
        params: dict[str, Any] = {}
        if self.doc_ids is not None:
            clauses.append(f"{doc}.id = ANY(%(f_doc_ids)s)")
            params["f_doc_ids"] = list(self.doc_ids)
        if self.doc_types is not None:
            clauses.append(f"{doc}.doc_type = ANY(%(f_doc_types)s)")
            params["f_doc_types"] = list(self.doc_types)
        if self.path_glob is not None:
            target = f"{doc}.path"
            if "/" not in self.path_glob and "\\" not in self.path_glob:
                target = f"regexp_replace({doc}.path, '^.*[/\\\\]', '')"
            clauses.append(f"{target} ILIKE %(f_path)s ESCAPE '\\'")
            params["f_path"] = glob_to_like(self.path_glob)
        if self.added_after is not None:
            clauses.append(f"{doc}.created_at >= %(f_after)s")
            params["f_after"] = self.added_after
        if self.added_before is not None:
            clauses.append(f"{doc}.created_at < %(f_before)s")
            params["f_before"] = self.added_before
        if self.collection_id is not None:
            clauses.append(
                "EXISTS (SELECT 1 FROM collection_documents f_cd"
                f" WHERE f_cd.document_id = {doc}.id AND f_cd.collection_id = %(f_collection)s)"
            )
            params["f_collection"] = self.collection_id
        return " AND ".join(clauses), params


def glob_to_like(pattern: str) -> str:
    """``*`` and ``?`` to ``%`` and ``_``; LIKE's own wildcards and the escape character made literal."""
    out = []
    for ch in pattern:
        if ch == "*":
            out.append("%")
        elif ch == "?":
            out.append("_")
        elif ch in "%_\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _to_datetime(value: DateLike | None) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value.strip())
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value
