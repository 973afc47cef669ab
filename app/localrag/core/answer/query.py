"""What a question searches for, and which passages found are worth giving to the model.

- A follow-up ("and on Windows?", "How often should I do it?") is searched together with the chat's previous
  question, so both the vector and the keyword leg see the topic; the prompt still carries the question as
  asked, after the earlier exchange. What makes a follow-up is what the question says (it points back, or
  names no subject of its own), not its length: "What is a factor?" after a question on data frames is a
  new question. One that reads as new is searched with the previous question only when it finds nothing
  relevant alone.
- Passages under a cosine similarity floor are noise to a small model and are left out (a BM25 match lowers
  the bar); strict mode asks for more. Measured on the chat tests' library: unrelated questions scored at most
  0.22 against it, related ones 0.32-0.74 (docs/benchmarks.md, "Chat").
- When one passage matches well, those under half its similarity are left out too: next to a 0.72 passage on
  tides, a 0.27 passage on glaciers only gave the small model something else to write about.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localrag.core.retrieve import Result

# Passages given to the model must reach this cosine similarity (a BM25 match lowers the bar): below it a
# passage is noise to a small model. Strict mode asks for more. Measured in docs/benchmarks.md, "Chat".
MIN_SIMILARITY = 0.25
MIN_SIMILARITY_KEYWORD = 0.15
STRICT_MIN_SIMILARITY = 0.30
STRICT_MIN_SIMILARITY_KEYWORD = 0.20
# Passages under this fraction of the best passage's similarity are left out as well.
RELATIVE_TO_BEST = 0.5

# Words that point back at something said before, wherever they stand ("Does it work on Windows?", "How do I
# undo these?"); "that" and "there" only where they are pronouns (see ``_refers_back``).
_POINTERS = frozenset(
    "it its they them their theirs this these those he him his she her former latter".split()
)
# A question opening with these continues the one before ("and on Windows?", "what about lists?").
_LEADS = re.compile(
    r"^(?:and|but|or|so|also|then|same|plus|what about|how about|what else|which one|which ones|"
    r"why not|how so|such as|like what|for example|in that case)\b"
)
# Words that ask for more of the same without naming a subject: "Which one is faster?", "Any examples?",
# "What are the alternatives?" names nothing of its own.
_GENERIC = frozenset(
    """example examples more detail details else faster slower better worse easier harder safer simpler
    bigger smaller larger cheaper newer older quicker best worst fastest difference differences alternative
    alternatives option options instead again mean means meaning work works working happen happens
    different another default defaults one ones really sure okay ok right true why reason reasons step steps
    anything everything something case cases exactly""".split()
)
_BE = frozenset("is are was were be been being isn't aren't wasn't weren't 's".split())
# Before "that" these make it a pronoun ("Why is that?", "What about that?", "Can I do that?").
_BEFORE_PRONOUN = _BE | frozenset(
    """do does did done doing can could will would should may might must about with for of in on to from
    like than what why how where when which undo change fix use try avoid see mean explain""".split()
)
# After "that" these make it a pronoun ("Can I change that to UTF-8?", "Is that so?").
_AFTER_PRONOUN = frozenset(
    "to in on for with from into by at so too also again work works mean means".split()
)
# "it" in "Is it possible to …", "Is it safe to …" stands for what follows, not for something said before.
_EXPLETIVE_IT = re.compile(
    r"\bit(?:'s| is| was| be)?\s+(?:\w+\s+)?(?:possible|necessary|safe|ok|okay|better|best|recommended|"
    r"advisable|wise|worth|important|hard|easy|easier|harder|common|normal|true|required|allowed|"
    r"permitted|faster|slower|a good idea|a bad idea)\s+(?:to|that|if|whether|for)\b"
)
# Pronouns that may point at a noun earlier in the same question ("… a list and sort it").
_MAY_POINT_WITHIN = frozenset("it its they them their that this".split())
# The words before which such a noun must stand: the pronoun comes after one of them.
_JOINS = frozenset("and then or but before after so without once when while , ;".split())
_NOUN_PHRASE = re.compile(r"\b(?:a|an|the|my|your|our|each|every)\s+[a-z]", re.IGNORECASE)


def _tokens(question: str) -> list[str]:
    return re.findall(r"[a-z0-9][a-z0-9'._-]*[a-z0-9]|[a-z0-9]|[,;]", question.lower())


def _refers_back(question: str) -> bool:
    """Whether a pronoun of ``question`` points at what was said before it (see ``is_follow_up``)."""
    q = _EXPLETIVE_IT.sub(" ", question.strip().lower())
    words = _tokens(q)
    original = question.strip()
    for i, w in enumerate(words):
        before = words[i - 1] if i > 0 else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        if w == "that":
            pronoun = i == 0 or not after or after in (",", ";") or before in _BEFORE_PRONOUN
            pronoun = pronoun or after in _AFTER_PRONOUN
        elif w == "there":
            pronoun = before not in _BE and after not in _BE and after not in ("'s", "exists", "exist")
        else:
            pronoun = w in _POINTERS
        if not pronoun:
            continue
        if w in _MAY_POINT_WITHIN and _antecedent_before(original, words, i):
            # "How do I create a list and sort it?" is about the list it names; "the import turns my version
            # strings into numbers, how do I stop that?" about what it says before the comma
            continue
        return True
    return False


def _antecedent_before(question: str, words: list[str], i: int) -> bool:
    """Whether a conjunction stands before word ``i`` with a noun phrase before it (an article and a word, or
    a name written with a capital)."""
    joins = [j for j in range(i) if words[j] in _JOINS]
    if not joins:
        return False
    head = " ".join(words[: joins[-1]])
    names = [w for w in re.findall(r"[A-Za-z][\w.]*", question)[1:] if w[0].isupper() and w != "I"]
    return bool(_NOUN_PHRASE.search(head)) or any(n.lower() in head.split() for n in names)


def _names_nothing(question: str) -> bool:
    """Whether ``question`` names no subject of its own ("Why?", "Which one is faster?", "Any examples?")."""
    return not [t for t in re.findall(r"[a-z0-9][a-z0-9'._-]*", question.lower()) if _topical(t)]


def _topical(word: str) -> bool:
    from localrag.core.text.spans import QUESTION_WORDS, STOPWORDS

    word = word.strip("'.-_")
    plain = word[:-1] if word.endswith("s") and word[:-1] in _GENERIC else word
    return bool(word) and word not in STOPWORDS and word not in QUESTION_WORDS and plain not in _GENERIC


def is_follow_up(question: str) -> bool:
    """Whether ``question`` leans on the one before, by what it says rather than its length.

    It does when it opens with "and", "but", "what about", "how about"… ("and on Windows?"); when a pronoun
    points back (it, they, this, those; "that" and "there" as pronouns: "Is it faster?", "How do I undo
    that?", "What can I do there?"); or when it names no subject of its own ("Why?", "Which one?", "Any
    examples?"). "What is a factor?" is a new question however short; "Is it possible to …" and "Is there a
    way to …" point at nothing before them."""
    q = question.strip().lower()
    if not q:
        return False
    return bool(_LEADS.match(q)) or _refers_back(question) or _names_nothing(q)


def follow_up_query(question: str, earlier: Sequence[str]) -> str:
    """What to search for: a follow-up is searched together with the previous question of the chat ("and on
    Windows?" after "How do I install it on Linux?"), so both the vector and the keyword leg see the topic."""
    if earlier and is_follow_up(question):
        return joined_query(question, earlier)
    return question


def joined_query(question: str, earlier: Sequence[str]) -> str:
    return f"{earlier[-1].strip()} {question.strip()}"


def search_for(
    question: str,
    earlier: Sequence[str],
    search: Callable[[str], tuple[Any, list[Result]]],
) -> tuple[str, Any, list[Result]]:
    """Search for ``question`` in its conversation: ``(query, response, relevant results)``.

    ``search(query)`` gives a retrieval response and its relevant passages. A follow-up (``is_follow_up``)
    is searched with the previous question; a question that reads as new is searched alone, and only when
    that finds nothing relevant is it searched again with the previous question, whose answer is taken when
    its passages hold at least half the words the question names itself (so an off-topic question after an
    on-topic one is not answered from the earlier topic's pages)."""
    query = follow_up_query(question, earlier)
    resp, results = search(query)
    if query != question or not earlier or results or getattr(resp, "reason", None) is not None:
        return query, resp, results
    joined = joined_query(question, earlier)
    joined_resp, joined_results = search(joined)
    if joined_results and _mentions(question, joined_results):
        return joined, joined_resp, joined_results
    return query, resp, results


# Share of the question's own words that a passage found with the previous question must hold.
MENTIONED_SHARE = 0.5


def _mentions(question: str, results: Sequence[Result]) -> bool:
    from localrag.core.text.spans import content_terms

    asked = set(content_terms(question))
    if not asked:
        return True
    for r in results[:3]:
        held = set(content_terms(str(getattr(r, "text", "") or "")))
        if len(asked & held) >= MENTIONED_SHARE * len(asked):
            return True
    return False


def relevant(results: Sequence[Result], strict: bool = False) -> list[Result]:
    """The passages worth giving to the model (see ``MIN_SIMILARITY`` and ``RELATIVE_TO_BEST``)."""
    floor, keyword_floor = (
        (STRICT_MIN_SIMILARITY, STRICT_MIN_SIMILARITY_KEYWORD)
        if strict
        else (MIN_SIMILARITY, MIN_SIMILARITY_KEYWORD)
    )
    similarities = [_vector(r) for r in results]
    best = max((v for v in similarities if v is not None), default=None)
    keep = []
    for r, vector in zip(results, similarities, strict=True):
        if vector is None:  # keyword mode: a BM25 match is all the evidence there is
            keep.append(r)
        elif (vector >= floor or (r.scores.get("bm25_rank") is not None and vector >= keyword_floor)) and (
            best is None or vector >= RELATIVE_TO_BEST * best
        ):
            keep.append(r)
    return keep


def _vector(r: Result) -> float | None:
    return r.scores.get("vector") if r.scores else r.similarity
