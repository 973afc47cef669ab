"""Recognising a whole-document or library question by its wording alone (``detect``).

"Summarize the R FAQ", "what are the chapters of X", "compare X and Y" and "which of my documents mention
Z" are recognised here, conservatively; ``overview.answer`` then decides from the documents whether the
subject names any (``core/answer/overview.py``). A question of two or three clauses ("what's in the X
handbook? give me the sections", "what is X about and what are its chapters") is one when every clause is
such a question or only names the document; one clause says what it is about, another which document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OUTLINE, SUMMARY, COMPARE, WHICH_DOCUMENTS = "outline", "summary", "compare", "which_documents"


@dataclass
class Intent:
    """A whole-document question.

    Attributes:
        kind: ``outline``, ``summary``, ``compare`` or ``which_documents``.
        subject: the document named ("" or "this document": the selection), or Z for ``which_documents``.
        others: the further documents named by a ``compare``.
        phrase: for a ``compare``, the words naming all its documents, which ``answer`` splits differently
            when the first split names no documents ("compare R FAQ and R Installation and Administration").
    """

    kind: str
    subject: str
    others: list[str] = field(default_factory=list)
    phrase: str = ""


# -- recognising the question ------------------------------------------------------------------------------

_LEAD = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|now)\b[,!]?\s*)?(?:please\s+)?"
    r"(?:(?:can|could|would|will) you\s+(?:please\s+)?)?"
    r"(?:(?:i'd|i would) like (?:you )?to\s+|i (?:want|need) (?:you )?to\s+)?(?:please\s+)?",
    re.IGNORECASE,
)
_TAIL = re.compile(
    r"(?:[\s,]+(?:please|for me|briefly|in short|in brief|in a few (?:words|sentences)|"
    r"(?:section|chapter|part) by (?:section|chapter|part)))+$",
    re.IGNORECASE,
)

_MAIN = r"(?:(?:main|major|top[- ]level|key|principal|different|various)\s+)?"
_PARTS = r"(?:sections|chapters|parts|headings)"
_TOC = rf"(?:{_PARTS}|table of contents|toc|outline|structure)"
_OF_X = r"(?:\s+(?:of|in|for)\s+(?P<x>.+))?"
_BRIEF = r"(?:(?:short|brief|quick|high[- ]level|general|one[- ]paragraph)\s+)?"
_DOCS = r"(?:documents?|docs|pdfs?|papers|articles|books|files|notes|sources|texts)"
_DOCS_PLAIN = r"(?:documents?|docs|pdfs?|papers|articles)"  # the library's, even without "my"
_MY = r"(?:my|our|the|these|those|all (?:of )?(?:my|the)|any of (?:my|the))"
_MENTION = (
    r"(?:mention(?:s|ed)?|talk(?:s|ed)? about|discuss(?:es|ed)?|cover(?:s|ed)?|contain(?:s|ed)?|"
    r"refer(?:s|red)? to|reference(?:s|d)?|say(?:s)? (?:anything |something )?about|deal(?:s|t)? with|"
    r"(?:is|are) about|(?:has|have) (?:anything |something )?(?:on|about))"
)
_MENTIONED = r"(?:mentioned|discussed|covered|referenced|described)"

# Whole questions (after _LEAD and _TAIL are cut), first match wins; ``x`` (and ``y``) name the subject.
_WORDINGS = {
    WHICH_DOCUMENTS: [
        rf"(?:which|what) (?:of )?{_MY} {_DOCS} (?:(?:do|does) )?{_MENTION} (?P<x>.+)",
        rf"(?:which|what) {_DOCS_PLAIN} (?:(?:do|does) )?{_MENTION} (?P<x>.+)",
        rf"(?:do|does|did) (?:any (?:of )?)?{_MY} {_DOCS} {_MENTION} (?P<x>.+)",
        rf"(?:do|does|is there) any (?:document|file|pdf) (?:that )?{_MENTION} (?P<x>.+)",
        rf"how many (?:of )?(?:{_MY} )?{_DOCS} (?:do )?{_MENTION} (?P<x>.+)",
        rf"where (?:do|does|did) (?:my|our|the) {_DOCS} {_MENTION} (?P<x>.+)",
        rf"where (?:in|among) (?:my|our|the) {_DOCS} (?:is|are) (?P<x>.+?)(?: {_MENTIONED})?",
        rf"where (?:is|are) (?P<x>.+?) {_MENTIONED} in (?:my|our|the) {_DOCS}",
        rf"(?:in )?which (?:of )?(?:{_MY} )?{_DOCS} (?:is|are) (?P<x>.+?) {_MENTIONED}(?: in)?",
        (
            rf"(?:list|find|show|search)(?: me)? (?:all )?(?:of )?(?:the |my )?{_DOCS} "
            rf"(?:(?:that|which) {_MENTION}|about|on|mentioning|discussing|covering|containing) (?P<x>.+)"
        ),
    ],
    COMPARE: [
        r"compare(?: and contrast)? (?P<x>.+)",
        (
            r"(?:what(?:'s| is| are) )?(?:the )?(?:main |key |major |biggest )?"
            r"(?:differences?|distinctions?) between (?P<x>.+)"
        ),
        r"how (?:does|do|is|are) (?P<x>.+?) (?:differ|different) from (?P<y>.+)",
        r"how does (?P<x>.+?) compare (?:to|with) (?P<y>.+)",
        r"how do (?P<x>.+? (?:and|vs\.?|versus) .+?) (?:differ|compare)",
        r"(?P<x>[^,]+? (?:vs\.?|versus) [^,]+)",
    ],
    OUTLINE: [
        rf"(?:what|which) (?:are|is|were) (?:the |its |their )?{_MAIN}{_TOC}{_OF_X}",
        rf"(?:list|show|give|tell|display|name)(?: me)? (?:all )?(?:of )?(?:the )?{_MAIN}{_TOC}{_OF_X}",
        rf"(?:the )?{_MAIN}{_TOC}{_OF_X}",
        rf"what {_PARTS} (?:does|do|did) (?P<x>.+?) (?:have|contain|include|consist of)",
        rf"what {_PARTS} (?:are|exist) (?:there )?in (?P<x>.+)",
        rf"how many {_PARTS} (?:does|do) (?P<x>.+?) have",
        r"how is (?P<x>.+?) (?:structured|organi[sz]ed|laid out|divided|broken down)",
        rf"(?:what|which) {_PARTS} (?:is|are) (?P<x>.+?) (?:divided|split|broken|organi[sz]ed) into",
        rf"what(?:'s| is) in (?P<x>.+?)\s*[-–—:;,]\s*(?:what|which) (?:are|is) its {_MAIN}{_TOC}",
        r"what (?:items|points|topics) (?:were|are|was|is) on the agenda(?: (?:of|for|at) (?P<x>.+))?",
        r"outline (?P<x>.+)",
    ],
    SUMMARY: [
        r"(?:summari[sz]e|sum up|recap|tl;?dr)(?: (?P<x>.+))?",
        (
            rf"(?:give|write|make|provide|produce|show|get)(?: me)? (?:a |an )?{_BRIEF}"
            r"(?:summary|overview|synopsis|recap|tl;?dr|gist|abstract)(?: (?:of|for|on) (?P<x>.+))?"
        ),
        rf"(?:a |an |the )?{_BRIEF}(?:summary|overview|synopsis|gist|tl;?dr)(?: (?:of|for) (?P<x>.+))?",
        r"what(?:'s| is| are| was) (?P<x>.+?) (?:(?:all|mainly|mostly|really|actually|basically) )?about",
        r"what (?:does|do|did) (?P<x>.+?) (?:cover|discuss|talk about|deal with|describe)",
        (
            r"what (?:topics|subjects|areas|themes) (?:does|do|did) (?P<x>.+?) "
            r"(?:cover|discuss|address|talk about|deal with|treat|include|walk through|go through|go over)"
        ),
        (
            r"what(?:'s| is) (?:the )?"
            r"(?:gist|main (?:point|idea|topic|subject)|(?:overall )?(?:topic|subject|theme)) of (?P<x>.+)"
        ),
        r"(?:tell|explain to) me what (?P<x>.+?) (?:is (?:all |mainly )?about|covers|discusses|deals with)",
    ],
}
_PATTERNS = [
    (kind, re.compile(rf"^{wording}$", re.IGNORECASE))
    for kind, wordings in _WORDINGS.items()
    for wording in wordings
]
# A clause that only names a document ("what's in the X handbook"): whole-document only beside one that asks
# for its outline or summary ("… ? what does it cover"), as "what is in the config file?" alone is not.
_NAMING = [re.compile(rf"^{w}$", re.IGNORECASE) for w in (r"what(?:'s| is) in (?P<x>.+)", r"about (?P<x>.+)")]
# Where a question of several clauses is cut: at "?" or ";", and before a comma or "and" that starts another
# question ("…, what chapters does it have", "… and what are its sections").
_CLAUSES = re.compile(
    r"\s*[?;]\s*|\s*(?:,\s*(?:and\s+)?|\s+and\s+)(?=(?:what|which|how|give|list|show|tell|name)\b)",
    re.IGNORECASE,
)
# A subject that points back to the document another clause names.
_PRONOUN = re.compile(r"(?:it|its|this|that|they|them|this one|that one)", re.IGNORECASE)
_SEPARATORS = re.compile(r"(\s*,\s*(?:and\s+)?|\s+(?:and|with|to|against|versus|vs\.?|&)\s+)", re.IGNORECASE)


def detect(question: str) -> Intent | None:
    """The whole-document question ``question`` asks, or ``None`` for an ordinary question."""
    q = _normalise(question)
    if not q or len(q) > 300:
        return None
    whole = _match(q)
    if whole is not None:
        return whole
    clauses = [_normalise(c) for c in _CLAUSES.split(q) if c.strip()]
    return _clauses(clauses) if 1 < len(clauses) <= 3 else None


def _match(q: str) -> Intent | None:
    for kind, pattern in _PATTERNS:
        m = pattern.match(q)
        if m:
            return _intent(kind, m.groupdict().get("x") or "", m.groupdict().get("y") or "")
    return None


def _clauses(clauses: list[str]) -> Intent | None:
    """One outline or summary question from its clauses: each asks for the outline or summary of a document
    or names one; the outline wins over the summary, the first document named over a pronoun."""
    kinds, subjects = [], []
    for clause in clauses:
        intent = _match(clause)
        if intent is not None and intent.kind in (OUTLINE, SUMMARY):
            kinds.append(intent.kind)
            subjects.append(intent.subject)
            continue
        named = next((m for m in (p.match(clause) for p in _NAMING) if m), None)
        if named is None:
            return None  # a clause of another kind: an ordinary question
        subjects.append(_clean_subject(named.group("x")))
    if not kinds:
        return None
    subject = next((s for s in subjects if s and not _PRONOUN.fullmatch(s)), "")
    return _intent(OUTLINE if OUTLINE in kinds else SUMMARY, subject, "")


def _normalise(question: str) -> str:
    q = " ".join(question.replace("’", "'").split()).rstrip(" ?.!")
    return _TAIL.sub("", _LEAD.sub("", q, count=1)).strip()


def _intent(kind: str, x: str, y: str) -> Intent | None:
    if kind == WHICH_DOCUMENTS:
        term = _clean_term(x)
        return Intent(kind, term) if term else None
    if kind == COMPARE:
        x, y = _clean_subject(x), _clean_subject(y)
        if y:
            return Intent(kind, x, [y])
        names = _SEPARATORS.split(x)[0::2]
        return Intent(kind, names[0].strip(), [n.strip() for n in names[1:] if n.strip()], phrase=x)
    subject = _clean_subject(x)
    if re.match(r"(?:a|an) ", subject):  # "the structure of a data frame": a kind of thing, not a document
        return None
    return Intent(kind, subject)


def _clean_subject(text: str) -> str:
    """The document's name alone: "the widget manual: what does it cover" → "the widget manual"."""
    text = re.split(r"\s*[:;?(]\s*|\s+[-–—]\s+", text, maxsplit=1)[0]
    text = re.sub(r"^(?:what|how) ", "", text, flags=re.IGNORECASE)
    text = re.sub(
        r" (?:covers|discusses|contains|says|describes|is (?:all |mainly )?about|talks about|deals with)$",
        "",
        text,
        flags=re.IGNORECASE,
    )
    return text.strip(" \"'“”‘’`*,.")


def _clean_term(text: str) -> str:
    text = re.sub(
        r"^(?:the (?:words?|terms?|phrase|name|topics?|subject)|anything about|something about) ",
        "",
        text.strip(),
        flags=re.IGNORECASE,
    )
    text = re.sub(r" (?:at all|anywhere|somewhere|in them)$", "", text, flags=re.IGNORECASE)
    return text.strip(" \"'“”‘’`*,.")


def groupings(intent: Intent) -> list[list[str]]:
    """The names as first split, then each split of the phrase in two (names may hold "and")."""
    out = [[intent.subject, *intent.others]]
    pieces = _SEPARATORS.split(intent.phrase) if intent.phrase else []
    for cut in range(1, len(pieces), 2):
        left, right = "".join(pieces[:cut]).strip(), "".join(pieces[cut + 1 :]).strip()
        if left and right and [left, right] not in out:
            out.append([left, right])
    return out
