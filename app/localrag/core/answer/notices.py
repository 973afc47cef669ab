"""What an answer says when it cannot rest on the documents: the store down, vectors of another model, nothing
relevant found, nothing checked, the exchange not saved."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg

from localrag.core.errors import as_known
from localrag.core.text import spans as sp

if TYPE_CHECKING:
    from localrag.core.retrieve import Result, RetrievalResponse

STORE_DOWN_NOTICE = "Your documents could not be searched ({why}), so this answer is not based on them."
MISMATCH_NOTICE = (
    "Your documents were indexed with another embedding model; re-embed them to search them. "
    "This answer is not based on them."
)
NOT_ANSWERED_TEXT = "Your documents do not seem to answer this."
STRICT_STORE_DOWN = "I cannot search your documents right now ({why}), so I have no answer from them."
NOT_SAVED_NOTICE = "This answer could not be saved to the chat history ({why})."
NOTHING_CHECKED = "Nothing the model wrote could be found in your documents."
UNMENTIONED_NOTICE = "None of your documents mentions {names}."
# At most this many of the question's names are looked up.
MAX_NAMES = 5
# How long the library's text may be searched for a name the keyword index does not hold as a word.
SUBSTRING_SEARCH_MS = 300

log = logging.getLogger("localrag.chat")
_TOKEN = re.compile(r"[A-Za-z][\w.+#-]*[\w+#]")


def notice_for(resp: RetrievalResponse, results: Sequence[Result], *, strict: bool) -> str:
    """The notice over an answer after retrieval: the store could not be searched, or holds another model's
    vectors; "" otherwise."""
    from localrag.core.retrieve import ERROR, MODEL_MISMATCH

    if resp.reason == ERROR:
        return STORE_DOWN_NOTICE.format(why=resp.error or "the database is not reachable")
    if resp.reason == MODEL_MISMATCH:
        return MISMATCH_NOTICE
    return ""  # nothing relevant found: the answer itself says the documents do not seem to answer


def unmentioned_notice(pool: Any, question: str) -> str:
    """The notice naming what the question names (a product, a person, an identifier) and no document of the
    library mentions: the passages found are then about something else. "" when it names nothing so, or the
    store cannot tell."""
    names = question_names(question)
    if not names:
        return ""
    from localrag.core.retrieve import bm25

    # A name written with dots or underscores ("cron.d", "app.db") is read by the index's parser as one token
    # where the documents write it inside a path ("/etc/cron.d"): it counts as mentioned when each of its
    # parts of three letters or more is.
    parts = {name: [p for p in re.split(r"[\W_]+", name) if len(p) >= 3] for name in names}
    try:
        with pool.connection() as conn:
            found = bm25.known(conn, [*names, *(p for ps in parts.values() for p in ps)])
            missing = [n for n in names if n not in found and not (parts[n] and set(parts[n]) <= found)]
            missing = [n for n in missing if n.isalpha() or not _written_anywhere(conn, n)]
    except Exception as exc:
        if as_known(exc) is None:
            raise
        log.info("could not look up the question's names: %s", exc)
        return ""
    if not missing:
        return ""
    quoted = [f"“{name}”" for name in missing]
    joined = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return UNMENTIONED_NOTICE.format(names=joined)


def _written_anywhere(conn: Any, name: str) -> bool:
    """Whether a chunk's text holds ``name`` as written (an identifier the index's parser cut otherwise,
    "Setup.exe" in "LocalRAG-Setup.exe"). A search that takes over ``SUBSTRING_SEARCH_MS`` counts as found:
    the notice is given only when the library surely lacks the name."""
    pattern = "%" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('statement_timeout', %s, true)", (str(SUBSTRING_SEARCH_MS),))
            row = conn.execute(
                "SELECT 1 FROM document_chunks WHERE text ILIKE %s LIMIT 1", (pattern,)
            ).fetchone()
    except psycopg.errors.QueryCanceled:
        return True
    return row is not None


def question_names(question: str) -> list[str]:
    """The words of a question that name something: a capitalised word that does not open a sentence
    ("Mercurial", "PostgreSQL"), a word with a digit, an inner capital, a dot or an underscore ("S3",
    "numpy.linalg", "max_tokens"). Common and question words are left out."""
    names: list[str] = []
    for m in _TOKEN.finditer(question):
        word = m.group().rstrip(".-")
        before = question[: m.start()].rstrip()
        opens = not before or before[-1] in '.?!:;"“('
        marked = (
            any(c.isdigit() for c in word)
            or any(c in "._+#" for c in word)
            or any(c.isupper() for c in word[1:])
        )
        if word.lower() in sp.STOPWORDS or word.lower() in sp.QUESTION_WORDS or len(word) < 2:
            continue
        if (marked or (word[0].isupper() and not opens)) and word not in names:
            names.append(word)
    return names[:MAX_NAMES]
