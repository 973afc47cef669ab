"""The sides of a comparison: the documents, collections or periods a question sets side by side.

"How did the bank balance change between the 2021 and the 2022 report?", "are Kestrel and OQB under the
same licence?", "what do the two manuals say about paper sizes?". The sides come from the question's own words
matched to the library's names — each document's title and file name, each collection's name — and, when it
names no two of those, to the years it names. A name's words count by how few names share them (``idf``):
"annual" of two reports says less than "board" of one set of minutes, and a word every name has says nothing;
a title's initials count as a word ("OQB" for "Open Quiz Builder"). When several documents fit one mention
equally ("the annual report" of two reports), the one retrieval ranked first for the question is taken.
Nothing here knows a document: the names are the library's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import PurePath
from typing import Any

DOCUMENT, COLLECTION, PERIOD = "document", "collection", "period"
MAX_SIDES = 4
# What says a question sets things side by side: a word that compares, or the same thing asked again of
# another ("who wrote X and who wrote Y").
_CUE = re.compile(
    r"\b(?:both|compared?|comparing|comparison|the same|same as|match(?:es|ed)?|differ\w*|versus|vs\.?|"
    r"how close|chang(?:e|ed|es)|each|between|than|against|either|and (?:who|what|which|how|when|where))\b",
    re.IGNORECASE,
)
# A date's words name no document ("12 March 2024" in a title).
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
# "the two manuals", "both reports", "each paper": the question counts documents it does not name.
_COUNTED = re.compile(
    r"\b(?:the two|both(?: the)?|each(?: of the)?|these two|the \d) (?:of (?:the|my) )?"
    r"(?:documents?|files?|manuals?|reports?|papers?|guides?|versions?|books?|editions?|vignettes?)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?<![\d.,$£€])((?:19|20)\d\d)(?![\d%]|,\d)")
# Words that name no document whatever the titles say.
_NOT_NAMES = frozenset(
    "what which when where who whom whose why how the this that these those there their its is are "
    "was were be been has have had does did do can could would should will may might must and or but "
    "not for from with into over under about between after before during than then also only all any "
    "each every some most more less many much other another such same new year years end page "
    "section table chapter part item note using use used give answer question please show it they "
    "them my our your you we an of in on to at by as two both one documentation".split()
)


@dataclass
class Name:
    """A name a question may call a side by: a document's title or file name, or a collection's name."""

    kind: str  # DOCUMENT or COLLECTION
    label: str  # as shown: the title, else the file name; the collection's name
    doc_ids: list[int]
    words: frozenset[str]
    initials: str = ""


@dataclass
class Side:
    """One column of a comparison: what it is called, the documents it reads, why the question names it."""

    name: str
    kind: str
    doc_ids: list[int] = field(default_factory=list)
    why: str = ""
    year: str = ""  # a period's year

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def words_of(text: str) -> set[str]:
    """The words of a name or question that may name something: lower case, a plural's "s" dropped."""
    out = set()
    for w in re.findall(r"[A-Za-z][A-Za-z0-9]+|(?:19|20)\d\d", text):
        w = w.lower()
        if w in _NOT_NAMES or w in _MONTHS:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def _positions(question: str) -> dict[str, int]:
    """Where each word (as ``words_of`` forms it, and as written for initials) first comes in the question."""
    out: dict[str, int] = {}
    for i, w in enumerate(re.findall(r"[A-Za-z][A-Za-z0-9]+|(?:19|20)\d\d", question)):
        for form in {w.lower(), *words_of(w)}:
            out.setdefault(form, i)
    return out


def _initials(label: str) -> str:
    parts = [w for w in re.findall(r"[A-Za-z]+", label) if w.lower() not in ("of", "the", "and", "for")]
    return "".join(w[0] for w in parts).lower() if len(parts) >= 2 else ""


def document_name(doc_id: int, path: str, title: str) -> Name:
    stem = PurePath(path.replace("\\", "/")).stem
    label = title.strip() or PurePath(path).name
    words = words_of(title) | words_of(re.sub(r"[_\-.]+", " ", stem))
    return Name(DOCUMENT, label, [doc_id], frozenset(words), _initials(title))


def collection_name(name: str, doc_ids: Sequence[int]) -> Name:
    return Name(COLLECTION, name, list(doc_ids), frozenset(words_of(name)), _initials(name))


def compares(question: str) -> bool:
    """Whether ``question`` has a word that sets things side by side (the sides are looked for only then)."""
    return bool(_CUE.search(question))


def find_sides(
    question: str, names: Sequence[Name], ranked: Sequence[int] = ()
) -> tuple[list[Side], list[dict[str, Any]]]:
    """The sides ``question`` compares (none when it compares nothing), and every name weighed with the
    words that matched it (the developer pane).

    Args:
        names: the library's documents and collections (``document_name``, ``collection_name``).
        ranked: document ids in the order retrieval ranked them for the question (a tie's breaker, and the
            documents "the two reports" stands for when it names none of them).
    """
    if not compares(question):
        return [], []
    asked = words_of(question)
    # Initials are a name as written in capitals ("OQB"), or typed small when no common word ("oqb"): the
    # "at" of "at least" is not a title "Advanced Topics".
    tokens = re.findall(r"[A-Za-z]+", question)
    asked_initials = {w.lower() for w in tokens if len(w) >= 2 and w.isupper()} | {
        w for w in tokens if len(w) >= 3 and w.islower() and w not in _NOT_NAMES
    }
    shared: dict[str, int] = {}
    for n in names:
        for w in n.words:
            shared[w] = shared.get(w, 0) + 1
    total = max(1, len(names))
    rank = {d: i for i, d in enumerate(ranked)}
    written = {w.lower().rstrip("s") for w in re.findall(r"(?<![.?!]\s)(?<!^)\b[A-Z][A-Za-z0-9]+", question)}
    written |= {w + "s" for w in written}
    weighed: list[tuple[float, Name, frozenset[str]]] = []
    considered: list[dict[str, Any]] = []
    for n in names:
        # A word every name has tells none apart; one some share names each of them, the best-ranked taken.
        hit = frozenset(w for w in n.words & asked if shared[w] < total or total == 1)
        acronym = len(n.initials) >= 2 and n.initials in asked_initials
        if not hit and not acronym:
            continue
        score = sum(math.log(1 + total / shared[w]) for w in hit) + (math.log(1 + total) if acronym else 0)
        words = hit | ({n.initials} if acronym else set())
        # A name no passage found for the question is a side only when the question plainly calls it so: by
        # initials, a year, two of its words or a capitalised one, that no other name has.
        found = not rank or any(d in rank for d in n.doc_ids)
        plain = acronym or len(hit) >= 2 or any(w in written or _YEAR.fullmatch(w) for w in hit)
        alone = all(shared[w] == 1 for w in hit)
        considered.append(
            {
                "name": n.label,
                "kind": n.kind,
                "words": sorted(words),
                "score": round(score, 3),
                "found": found,
            }
        )
        if found or (plain and alone):
            weighed.append((score, n, words))

    def best_rank(n: Name) -> int:
        return min((rank.get(d, len(rank)) for d in n.doc_ids), default=len(rank))

    # The best-matched names first; between equals, the one retrieval ranked first; a document before a
    # collection that holds it.
    weighed.sort(key=lambda t: (-t[0], best_rank(t[1]), t[1].kind != DOCUMENT))
    sides: list[Side] = []
    taken: list[frozenset[str]] = []
    taken_docs: set[int] = set()
    for _, n, hit in weighed:
        if any(hit <= t for t in taken) or set(n.doc_ids) <= taken_docs:
            continue  # its words name a side already taken ("report" of "the annual report")
        taken.append(hit)
        taken_docs.update(n.doc_ids)
        said = ", ".join(f"“{w}”" for w in sorted(hit))
        sides.append(Side(n.label, n.kind, list(n.doc_ids), f"the question says {said}"))
        if len(sides) == MAX_SIDES:
            break
    if len(sides) >= 2:  # in the order the question names them ("between the 2021 and the 2022 report")
        order = _positions(question)
        first = {
            id(s): min((order.get(w, len(order)) for w in hit), default=0)
            for s, hit in zip(sides, taken, strict=True)
        }
        return sorted(sides, key=lambda s: first[id(s)]), considered
    counted = _COUNTED.search(question)
    if counted and ranked:  # "the two manuals": the documents retrieval ranked first, after any named
        label = {d: n.label for n in names if n.kind == DOCUMENT for d in n.doc_ids}
        for d in ranked:
            if len(sides) >= 2:
                break
            if d not in taken_docs and d in label:
                why = f"the question says “{counted.group(0)}”: the documents the best passages are from"
                sides.append(Side(label[d], DOCUMENT, [d], why))
                taken_docs.add(d)
        if len(sides) >= 2:
            return sides, considered
    years = list(dict.fromkeys(_YEAR.findall(question)))
    if len(years) >= 2:
        years.sort()
        return [
            Side(y, PERIOD, [], f"the question names the year {y}", year=y) for y in years[:MAX_SIDES]
        ], considered
    return [], considered
