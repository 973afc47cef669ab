"""Hook points for domain packs: knowledge of one field (finance, medicine…) kept out of the core.

The core knows documents, not industries. A *pack* (``localrag.domains.<name>``, or any installed package
that declares an entry point in the ``localrag.domains`` group) implements some of the hooks below with
``@hookimpl`` (pluggy, as simonw/llm does for its plugins). A pack acts on a document only when the document
carries strong evidence of its field, recorded at ingest in the document's metadata (``meta["domain"]``, and
in ``meta["sources"]["domain"]`` the evidence), or when a person turned it on for that document
(``local-rag meta DOC --domain NAME``, the Details dialog).

The hooks, in the order a document and then a question meet them:

- ``document_domain``: does this document show strong evidence of the pack's field? (at ingest)
- ``identity_fields``: the fields of a document the pack acts on (organisation, kind, period…), each with
  where it was found.
- ``routing_words``: words a question uses that never name a document, and kinds of documents a question
  may ask for, in a library that holds documents of the pack's field.
- ``pages_first``: query understanding: pages of the best passages' documents that answer the question
  better than its words find (a company's balance sheet for "quick ratio").
- ``evidence_features``: per-candidate features the answer's evidence scoring adds (a row of a statement
  line a measure is computed from).
- ``is_title``: whether a line is a title the pack knows (never an answer).
- ``column_headings``: column headings the pack knows beside plain years ("FY2018", "Q4 2023").
- ``measure_synonyms``: phrases that name the same row of a table ("capital expenditure", "purchases of
  property, plant and equipment"), for the operands of a computation a question asks for.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from typing import Any

import pluggy

log = logging.getLogger("localrag.hooks")

PROJECT = "localrag"
ENTRY_POINTS = "localrag.domains"
# Packs that ship with the product, registered by module name (the core never imports them).
BUILTIN = ("localrag.domains.finance",)
# ``meta["domain"]`` set by a person to this value: no pack acts on the document.
NO_DOMAIN = "none"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@dataclass(frozen=True)
class DomainEvidence:
    """A pack's claim on a document: its ``domain`` and the ``evidence`` (where, and what was seen)."""

    domain: str
    evidence: str


@dataclass
class Fields:
    """Identity fields a pack found, and where each was found (``sources``)."""

    fields: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RoutingWords:
    """``common``: words that never name a document; ``kinds``: (regular expression a question matches, the
    word a document's kind holds) pairs."""

    common: frozenset[str] = frozenset()
    kinds: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PinnedPage:
    """A page to put first: its best passage (the one holding most ``lines``, a regular expression, then most
    of the question's words) leads the results. ``label`` and ``why`` say what it is and why."""

    doc_id: int
    page: int
    label: str
    lines: str
    pack: str
    why: str


class Specs:
    """The hook specifications (each pack implements those it needs)."""

    @hookspec(firstresult=True)
    def document_domain(
        self, path: str, title: str, pages: Sequence[tuple[int, str]], pdf_meta: dict[str, str]
    ) -> DomainEvidence | None:
        """The pack's claim when the document shows strong evidence of its field; ``pages`` are
        ``(number, text)``, the first ones whole and the others' first lines."""

    @hookspec(firstresult=True)
    def identity_fields(
        self,
        domain: str,
        path: str,
        title: str,
        first_pages: Sequence[str],
        pdf_meta: dict[str, str],
    ) -> Fields | None:
        """The fields of a document of ``domain`` (None when ``domain`` is not the pack's)."""

    @hookspec
    def routing_words(self, domains: frozenset[str]) -> RoutingWords | None:
        """Routing words of the pack, when ``domains`` (those of the library's documents) holds its own."""

    @hookspec
    def pages_first(
        self, conn: Any, question: str, documents: Sequence[tuple[int, str]]
    ) -> list[PinnedPage] | None:
        """Pages to put first for ``question`` from ``documents`` (``(doc_id, domain)`` of the best passages,
        best first); a pack looks only in documents of its domain."""

    @hookspec
    def evidence_features(self, question: str, text: str, domain: str) -> dict[str, float] | None:
        """Features of one candidate sentence (``text``, from a document of ``domain``) for ``question``;
        ``measure_row`` (1.0): a row of figures a measure the question names is computed from."""

    @hookspec(firstresult=True)
    def is_title(self, text: str, domain: str) -> bool | None:
        """True when ``text`` (of a document of ``domain``) is a title the pack knows (a heading, never an
        answer)."""

    @hookspec
    def column_headings(self, domain: str) -> str | None:
        """For a document of ``domain``: a regular expression for column headings besides plain years
        ("FY2018", "Q4 2023")."""

    @hookspec
    def measure_synonyms(self, domain: str) -> Sequence[Sequence[str]] | None:
        """For a document of ``domain``: groups of phrases that name the same row of a table ("revenue",
        "net sales"); a computation's operand named by one matches a row labelled by another."""


_LOCK = threading.Lock()
_MANAGER: pluggy.PluginManager | None = None


def manager() -> pluggy.PluginManager:
    """The plugin manager with the built-in packs and those installed under ``localrag.domains`` (loaded on
    first use: importing this module changes nothing)."""
    global _MANAGER
    with _LOCK:
        if _MANAGER is None:
            pm = pluggy.PluginManager(PROJECT)
            pm.add_hookspecs(Specs)
            for name in BUILTIN:
                pm.register(importlib.import_module(name), name=name.rsplit(".", 1)[-1])
            for ep in importlib_metadata.entry_points(group=ENTRY_POINTS):
                if pm.has_plugin(ep.name):
                    continue
                try:
                    pm.register(ep.load(), name=ep.name)
                except Exception:  # a broken third-party pack must not stop the product
                    log.exception("domain pack %s could not be loaded", ep.name)
            _MANAGER = pm
        return _MANAGER


def packs() -> list[str]:
    """The names of the packs registered."""
    return sorted(name for name, _ in manager().list_name_plugin())


# -- the calls the core makes --------------------------------------------------------------------------------


def document_domain(
    path: str, title: str, pages: Sequence[tuple[int, str]], pdf_meta: dict[str, str]
) -> DomainEvidence | None:
    result: DomainEvidence | None = manager().hook.document_domain(
        path=path, title=title, pages=pages, pdf_meta=pdf_meta
    )
    return result


def identity_fields(
    domain: str, path: str, title: str, first_pages: Sequence[str], pdf_meta: dict[str, str]
) -> Fields:
    if not domain or domain == NO_DOMAIN:
        return Fields()
    found: Fields | None = manager().hook.identity_fields(
        domain=domain, path=path, title=title, first_pages=first_pages, pdf_meta=pdf_meta
    )
    return found or Fields()


def routing_words(domains: frozenset[str]) -> RoutingWords:
    common: set[str] = set()
    kinds: list[tuple[str, str]] = []
    for words in manager().hook.routing_words(domains=domains):
        if words:
            common |= words.common
            kinds += words.kinds
    return RoutingWords(frozenset(common), tuple(kinds))


def pages_first(conn: Any, question: str, documents: Sequence[tuple[int, str]]) -> list[PinnedPage]:
    if not any(domain and domain != NO_DOMAIN for _, domain in documents):
        return []  # no pack acts on these documents
    return [
        p
        for pages in manager().hook.pages_first(conn=conn, question=question, documents=documents)
        for p in pages or ()
    ]


def evidence_features(question: str, text: str, domain: str) -> dict[str, float]:
    out: dict[str, float] = {}
    if not domain or domain == NO_DOMAIN:
        return out
    for found in manager().hook.evidence_features(question=question, text=text, domain=domain):
        out.update(found or {})
    return out


def is_title(text: str, domain: str) -> bool:
    if not domain or domain == NO_DOMAIN:
        return False
    return bool(manager().hook.is_title(text=text, domain=domain))


def column_headings(domain: str) -> str:
    """The column headings the packs acting on a document of ``domain`` know ('' for none)."""
    if not domain or domain == NO_DOMAIN:
        return ""
    return "|".join(p for p in manager().hook.column_headings(domain=domain) if p)


def measure_synonyms(domain: str) -> list[tuple[str, ...]]:
    """The groups of phrases naming the same row that the packs acting on a document of ``domain`` know."""
    if not domain or domain == NO_DOMAIN:
        return []
    return [tuple(g) for groups in manager().hook.measure_synonyms(domain=domain) for g in groups or ()]
