"""Document routing: a question that names a document's identity searches that document first.

"What did the Millbrook society spend in 2023?" names an organisation (Millbrook) and a period (2023). Each
ready document's names come from its metadata (organisation, with and without its legal form), its file name
and its title (``core/text/identity.py``); a run of one to four words of the question matches a name when
they are the same letters and digits ("Maple Row" matches ``MAPLEROW_2023_report.pdf``, "Acme's"
matches "Acme Ltd"). Among the documents whose name the question gives, a year it names keeps those
of that period (or, when there is none, the nearest later one: a report repeats the year before), a quarter
keeps that quarter's, and a kind it names ("annual report", "minutes", "manual") that kind's.

The decision: ``only`` when one document is left (the search is filtered to it), ``first`` when several are
(filtered to them; the rest of the library fills the list when they give fewer than k passages), ``none``
when the question names no document. A search with an explicit filter (documents, types, path, dates) is
never routed, and routing can be turned off per search or in the settings.
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from localrag.core import hooks
from localrag.core.text import identity

ONLY, FIRST, NONE, OFF, FILTERED = "only", "first", "none", "off", "filtered"
MAX_SPAN_WORDS = 4
MIN_NAME_CHARS = 2
# Words that never name a document on their own (a file called "notes.txt" is not what "notes" means).
_COMMON = frozenset(
    "what which when where who whom whose why how the this that these those there their its is are was were "
    "be been has have had does did do can could would should will shall may might must and or but not for "
    "from with without into onto over under about above below between after before during per than then also "
    "only all any each every some most more less many much few other another such same new total net year "
    "years end number data page section table "
    "chapter figure part item note notes using use used based give answer question please show shown "
    "calculate compute".split()
)
_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
# Kinds a question may ask for, in any library ("the manual", "the minutes"); packs add their own
# (``hooks.routing_words``: the form names of their field, where the library holds such documents).
_KIND_ASKED = (
    (r"\bmanual\b|\buser'?s? guide\b|\bhandbook\b", "manual"),
    (r"\bminutes\b", "minutes"),
    (r"\binvoices?\b", "invoice"),
    (r"\bcontract\b|\bagreement\b", "contract"),
)


@dataclass
class Doc:
    id: int
    file_name: str
    names: dict[str, str]  # folded name → where it came from
    year: int | None
    quarter: int | None
    kind: str
    domain: str = ""


@dataclass
class Route:
    """A routing decision: ``mode`` (only, first, none, off, filtered), the documents searched first and why.

    Attributes:
        doc_ids: the documents searched first (``only``: the only ones, unless they give fewer than k).
        reason: one line a person can read.
        matched: per document, what in the question matched it (for ``search --json`` and the developer pane).
    """

    mode: str
    doc_ids: list[int] = field(default_factory=list)
    reason: str = ""
    matched: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "doc_ids": self.doc_ids, "reason": self.reason, "documents": self.matched}


class Identities:
    """The ready documents' names and periods, read again only when the documents change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] | None = None
        self.docs: list[Doc] = []
        self.by_name: dict[str, list[Doc]] = {}
        self.words = hooks.RoutingWords()  # the words of the packs acting on the library's documents

    def load(self, conn: psycopg.Connection[Any]) -> Identities:
        key = conn.execute(
            "SELECT count(*), max(updated_at), coalesce(sum(id), 0) FROM documents WHERE status = 'ready'"
        ).fetchone()
        with self._lock:
            if key is not None and tuple(key) == self._key:
                return self
            rows = conn.execute(
                "SELECT id, path, title, meta FROM documents WHERE status = 'ready' ORDER BY id"
            ).fetchall()
            domains = {str((m or {}).get("domain") or "") for _, _, _, m in rows}
            self.words = hooks.routing_words(frozenset(domains - {"", hooks.NO_DOMAIN}))
            self.docs = share_names(
                [
                    document_names(int(i), str(p), str(t or ""), dict(m or {}), self.words.common)
                    for i, p, t, m in rows
                ]
            )
            self.by_name = {}
            for d in self.docs:
                for name in d.names:
                    self.by_name.setdefault(name, []).append(d)
            self._key = tuple(key) if key is not None else None
        return self


_CACHES: weakref.WeakKeyDictionary[Any, Identities] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def identities_for(owner: Any) -> Identities:
    """The identity cache kept for ``owner`` (a library's connection pool) while it lives."""
    with _CACHES_LOCK:
        cache = _CACHES.get(owner)
        if cache is None:
            cache = _CACHES[owner] = Identities()
        return cache


def share_names(docs: list[Doc]) -> list[Doc]:
    """Documents that share a name are of one organisation: each gets the others' names too (the report
    whose cover says "Acme Holdings Ltd" lends "Acme" to ``ACMEHOLDINGS_2022_minutes.pdf``)."""
    parent = list(range(len(docs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_with: dict[str, int] = {}
    for i, d in enumerate(docs):
        for name in d.names:
            j = first_with.setdefault(name, i)
            parent[find(i)] = find(j)
    groups: dict[int, dict[str, str]] = {}
    for i, d in enumerate(docs):
        merged = groups.setdefault(find(i), {})
        for name, source in d.names.items():
            merged.setdefault(name, source)
    for i, d in enumerate(docs):
        for name, source in groups[find(i)].items():
            d.names.setdefault(name, source)
    return docs


def document_names(
    doc_id: int, path: str, title: str, meta: dict[str, Any], common: frozenset[str] = frozenset()
) -> Doc:
    """The names a question may call a document by (never one of the ``common`` words packs add)."""
    names: dict[str, str] = {}
    more_common = common

    def add(text: str, source: str) -> None:
        key = _fold(text)
        common = key in _COMMON or key in identity.GENERIC_WORDS or key in more_common
        if len(key) >= MIN_NAME_CHARS and not key.isdigit() and not common:
            names.setdefault(key, source)

    edited = meta.get("edited") or {}
    org = str(meta.get("organization") or "")
    if org:
        add(org, "organization")
        bare = _bare_org(org)
        add(bare, "organization")
        first = bare.split()[0] if bare.split() else ""
        if first.isupper() and len(first) >= MIN_NAME_CHARS:  # "ACME Holdings Ltd" → "ACME"
            add(first, "organization")
    ticker = str(meta.get("ticker") or "")
    if ticker:
        names.setdefault(_fold(ticker), "ticker")
    stem = Path(path.replace("\\", "/")).stem
    name_org = identity.name_words(stem)
    if name_org:
        add(name_org, "file name")
    shown = str(edited.get("title") or title)
    words = [w for w in re.findall(r"[A-Za-z][\w+\-]*", shown) if _fold(w) not in identity.GENERIC_WORDS]
    # A title names a document when it reads as a name ("Acme Widget Guide", "Maple Town Bylaws"), not as a
    # sentence ("Tumor necrosis factor in sepsis", a paper's title a question may well repeat).
    name_like = bool(words) and all(w[0].isupper() or any(ch.isdigit() for ch in w) for w in words)
    if shown and len(shown) <= 60 and name_like:
        add(shown, "title")
        if 1 < len(words) <= 3:
            add(" ".join(words), "title words")
    year = meta.get("year")
    quarter = meta.get("quarter")
    return Doc(
        doc_id,
        Path(path.replace("\\", "/")).name,
        names,
        int(year) if year else None,
        int(quarter) if quarter else None,
        str(meta.get("kind") or ""),
        "" if meta.get("domain") == hooks.NO_DOMAIN else str(meta.get("domain") or ""),
    )


def route(ids: Identities, question: str) -> Route:
    """Which documents ``question`` names (see the module docstring)."""
    words = [_strip_possessive(w) for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9&'’.\-]*", question)]
    folded = [_fold(w) for w in words]
    hits: dict[int, list[str]] = {}
    docs: dict[int, Doc] = {}
    for i in range(len(folded)):
        key = ""
        for j in range(i, min(i + MAX_SPAN_WORDS, len(folded))):
            key += folded[j]
            for d in ids.by_name.get(key, ()):
                said = " ".join(words[i : j + 1])
                if d.names[key] == "ticker" and not said.isupper():
                    continue  # a ticker ("ALL", "ON") counts only as written: in capitals
                if said not in hits.setdefault(d.id, []):
                    hits[d.id].append(f"{said} ({d.names[key]})")
                docs[d.id] = d
    # Words taken out of a title ("Maple" of "Maple Town Bylaws") are also what the library is about:
    # they never route on their own.
    weak = {"title words"}
    for doc_id in [i for i, said in hits.items() if all(h.rsplit(" (", 1)[1][:-1] in weak for h in said)]:
        docs.pop(doc_id, None)
        hits.pop(doc_id, None)
    if not docs:
        return Route(NONE, reason="the question names no document of the library")
    chosen = list(docs.values())
    why = {d.id: list(hits[d.id]) for d in chosen}
    years = asked_years(question)
    if years:
        fiscal = asked_years(question, fiscal_only=True)
        target = max(fiscal or years)  # "as of FY2021, … in 2024": the report is FY2021's
        same = [d for d in chosen if d.year == target]
        later = sorted({d.year for d in chosen if d.year and target < d.year <= target + 2})
        if same:
            chosen = same
            for d in chosen:
                why[d.id].append(f"period {target}")
        elif later:
            chosen = [d for d in chosen if d.year == later[0]]
            for d in chosen:
                why[d.id].append(f"period {later[0]} (the next report after {target})")
    quarter = asked_quarter(question)
    if quarter and len(chosen) > 1:
        same_q = [d for d in chosen if d.quarter == quarter]
        if same_q:
            chosen = same_q
            for d in chosen:
                why[d.id].append(f"quarter {quarter}")
    kind = asked_kind(question, ids.words.kinds)
    if kind and len(chosen) > 1:
        same_k = [d for d in chosen if kind.lower() in d.kind.lower()]
        if same_k:
            chosen = same_k
            for d in chosen:
                why[d.id].append(f"kind {kind}")
    mode = ONLY if len(chosen) == 1 else FIRST
    names = ", ".join(d.file_name for d in chosen[:5]) + ("…" if len(chosen) > 5 else "")
    reason = (
        f"the question names {names}: searched only there"
        if mode == ONLY
        else f"the question names {len(chosen)} documents ({names}): searched first"
    )
    return Route(
        mode,
        [d.id for d in chosen],
        reason,
        [{"doc_id": d.id, "file_name": d.file_name, "why": why[d.id]} for d in chosen],
    )


_CONTENTS = re.compile(
    r"\b(main|major|top-level)\s+(sections|chapters|parts|topics)\b"
    r"|\b(chapters|sections|table of contents)\s+of\b"
    r"|\boverview of\b|\bwhat (does|do)\b.{0,80}\bcover\b|\bwhat topics\b|\bsummari[sz]e\b"
    r"|\blist the (chapters|sections|parts)\b",
    re.IGNORECASE,
)


def asks_for_contents(question: str) -> bool:
    """Whether the question asks what a whole document holds ("What are the main chapters of …?", "Give me an
    overview of …"): its table of contents answers it."""
    return bool(_CONTENTS.search(question))


def asked_years(question: str, *, fiscal_only: bool = False) -> list[int]:
    """Years the question names: ``2018``, ``FY2018``, ``FY18``, ``fiscal 2018`` (``fiscal_only``: only those
    marked as a fiscal year)."""
    fiscal = [
        int(y) for y in re.findall(r"\b(?:FY|fiscal(?: year)?)\s?((?:19|20)\d\d)", question, re.IGNORECASE)
    ]
    fiscal += [2000 + int(y) for y in re.findall(r"\bFY\s?'?(\d\d)\b", question, flags=re.IGNORECASE)]
    if fiscal_only:
        return fiscal
    return fiscal + [int(y) for y in re.findall(r"(?<![\d.,$])((?:19|20)\d\d)(?![\d%]|,\d)", question)]


def asked_quarter(question: str) -> int | None:
    low = question.lower()
    m = re.search(r"(?:\b|\d)q([1-4])\b", low)
    if m:
        return int(m.group(1))
    m = re.search(r"\b(first|second|third|fourth|1st|2nd|3rd|4th)[- ]quarter\b", low)
    return _QUARTER_WORDS[m.group(1)] if m else None


def asked_kind(question: str, more: tuple[tuple[str, str], ...] = ()) -> str:
    """The kind of document a question asks for: one any library has, or one a pack adds (``more``)."""
    low = question.lower()
    for pattern, kind in (*more, *_KIND_ASKED):
        if re.search(pattern, low):
            return kind
    return ""


def _bare_org(org: str) -> str:
    """``The Boeing Company`` → ``Boeing``; ``JPMorgan Chase & Co.`` → ``JPMorgan Chase``."""
    name = re.sub(r"^the\s+", "", org.strip(), flags=re.IGNORECASE)
    for _ in range(2):
        name = re.sub(
            r"[,\s&]+(inc|incorporated|corp|corporation|co|company|companies|ltd|limited|plc|llc|lp|n\.?v|"
            r"s\.?a|ag|se|gmbh|group|holdings|international)\.?$",
            "",
            name,
            flags=re.IGNORECASE,
        ).strip(" ,&")
    return name


def _strip_possessive(word: str) -> str:
    return re.sub(r"['’]s$", "", word).strip(".-'’")


def _fold(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", text.lower())
