"""Grounded means grounded: with "Use my documents" on, a question the documents do not answer gets that
answer and the closest passages, never the model's own words, unless the person asks the model alone; and a
question is searched with the one before only when it follows on from it. Real store, real embedding model,
real GGUF."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fixtures_chat import FAST, changed_settings, index
from localrag.core.answer import history
from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import (
    MODEL_ALONE,
    MODEL_ALONE_LABEL,
    NOT_ANSWERED,
    Done,
    EvidenceReady,
    Retrieved,
    Searching,
    Token,
)
from localrag.core.answer.prompts import Prompt
from localrag.core.answer.query import follow_up_query
from localrag.core.answer.request import AskRequest
from localrag.core.config import Settings
from localrag.core.llm.llm import LocalLLM, load_llm

# Two pages in the manner of R's manual: reading a data file into a data frame, and factors.
DOCS = {
    "r-data.md": (
        "# Reading data from files\n\nLarge data objects are usually read as values from external files. "
        "To read an entire data frame directly, the external file should have a header line with the names "
        "of the variables and one line for each case. The function read.table() reads such a file into a "
        'data frame: houses <- read.table("houses.data", header = TRUE). The function read.csv() reads a '
        "file of comma-separated values into a data frame.\n"
    ),
    "r-factors.md": (
        "# Factors\n\nA factor is a vector object used to specify a discrete classification (grouping) of "
        "the components of other vectors of the same length. R provides both ordered and unordered factors. "
        "The function factor() makes a factor from a vector, and levels() gives its levels.\n"
    ),
    "backup.md": (
        "# Backups\n\nLocal RAG keeps its database in the data folder. To back up your library, quit the app "
        "and copy the whole data folder to another disk. To restore a backup, quit the app, replace the "
        "data folder with the copy, and start the app again.\n"
    ),
}
# Questions the documents above do not answer at all: some find passages, none relevant enough.
OFF_TOPIC = [
    "How do I configure TLS certificates for a Kubernetes ingress controller?",
    "What is the capital of Peru?",
    "Who won the 1998 football world cup?",
    "How many levels does a parking garage have?",
    "What vector graphics editor should I use?",
]
# Off-topic questions that share a word with a page ("restore", "factor"): the passage passes the bar, and no
# sentence of it answers.
SHARES_A_WORD = ["How do I restore an old oil painting?", "Which safety factor do bridge engineers use?"]


@pytest.fixture(scope="module")
def corpus(library, tmp_path_factory):
    folder = tmp_path_factory.mktemp("grounded-docs")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index(library, [folder], ready=len(DOCS))
    with changed_settings(library, **FAST, reword=False) as lib:
        yield lib


@pytest.fixture(scope="module")
def llm(home) -> LocalLLM:
    return load_llm(Settings(n_ctx=2048, threads=1))


@pytest.fixture()
def engine(corpus, llm) -> ChatEngine:
    return ChatEngine(corpus, llm)


def _run(engine: ChatEngine, chat_id: int | None, question: str, **kw) -> list:
    kw.setdefault("max_tokens", 16)
    return list(engine.ask(AskRequest(question, chat_id=chat_id, **kw)))


@pytest.mark.parametrize("lead", ["auto", "model"])
def test_off_topic_questions_get_no_words_from_the_model(engine, monkeypatch, lead):
    """Whatever leads the answer, a question the documents do not answer is never handed to the model: no
    prompt, no token; the answer says the documents do not seem to answer, and its sources are the closest
    passages found."""
    monkeypatch.setattr(engine.settings, "answer_lead", lead)
    listed = 0
    for question in OFF_TOPIC:
        events = _not_found(engine, question)
        done, retrieved = events[-1], next(e for e in events if isinstance(e, Retrieved))
        closest = retrieved.response.results[:3]
        assert [s.chunk_ids for s in done.sources] == [r.chunk_ids for r in closest]
        listed += bool(done.sources)
    assert listed  # passages were found, though none relevant enough: they are listed as the closest


def test_off_topic_questions_that_share_a_word_get_no_words_from_the_model(engine):
    for question in SHARES_A_WORD:
        done = _not_found(engine, question)[-1]
        assert done.sources


def test_a_declined_answer_quotes_its_nearest_sentence_and_the_export_keeps_it(engine, corpus):
    """A question whose passages pass the bar and whose sentences do not answer it: the answer says the
    documents do not seem to answer, then names the likeliest sentence read with its ``[n]``, which counts
    as cited; the exported chat shows it under the same words."""
    from localrag.core.answer import export
    from localrag.core.answer.quotes import NEAREST

    events = _run(engine, None, SHARES_A_WORD[0])
    done = events[-1]
    assert isinstance(done, Done) and done.basis == NOT_ANSWERED and done.evidence is not None
    nearest = done.evidence.nearest[0]
    assert f"{NEAREST} {nearest.shown} [{nearest.number}]" in done.answer
    assert done.sources[nearest.number - 1].cited
    with corpus.connect() as conn:
        _, md = export.export_chat(conn, done.chat_id, "md")
    assert NEAREST in md and nearest.shown in md


def _not_found(engine: ChatEngine, question: str) -> list:
    events = _run(engine, None, question, persist=False)
    assert not [e for e in events if isinstance(e, Prompt | Token)], question
    done = events[-1]
    assert isinstance(done, Done) and done.basis == NOT_ANSWERED, question
    assert done.answer.startswith("Your documents do not seem to answer this"), done.answer
    assert done.evidence is not None and not done.evidence.answered and not done.generated
    assert "tokens" not in done.timings and "model alone" not in done.notice
    assert all(1 <= n <= len(done.sources) for n in done.evidence.closest)
    out = done.to_json()
    assert out["not_found"] is True and out["basis"] == "not_found"
    return events


def test_strict_mode_keeps_its_plain_answer(engine):
    done = _run(engine, None, OFF_TOPIC[1], strict=True, persist=False)[-1]
    assert done.answer == "I could not find this in your documents." and done.sources == []
    assert done.basis == NOT_ANSWERED


def test_the_model_alone_when_asked_is_said_to_be_the_models(engine):
    """The not-found answer's way out: the same question without the documents is the model's answer,
    marked so (``basis`` model, kept with the message), headed as such by every front end."""
    first = _run(engine, None, OFF_TOPIC[1])[-1]
    assert first.basis == NOT_ANSWERED
    events = _run(engine, first.chat_id, OFF_TOPIC[1], grounded=False)
    assert [e for e in events if isinstance(e, Token)]  # the model wrote it
    done = events[-1]
    assert done.basis == MODEL_ALONE and done.answer and done.sources == []
    with engine.library.connect() as conn:
        stored = history.load_messages(conn, first.chat_id)
    assert [m.timings.get("basis") for m in stored if m.role == "assistant"] == [NOT_ANSWERED, MODEL_ALONE]
    from localrag.gui.views.transcript import turn_html, turns_from_messages

    turns = turns_from_messages(stored)
    colours = dict.fromkeys(("muted", "warning", "error", "you_bg", "quote_bg", "quote_bar"), "#000")
    assert not turns[0].model_alone and turns[1].model_alone
    html = turn_html(1, turns[1], colours)
    assert html.index(MODEL_ALONE_LABEL) < html.index("<p>", html.index(MODEL_ALONE_LABEL))
    assert MODEL_ALONE_LABEL not in turn_html(0, turns[0], colours)


def test_a_whole_document_answer_lists_its_sources_without_a_score(engine):
    """An outline's passages were never scored: they show no score rather than "score 0.00"."""
    from localrag.gui.views.source_ref import SourceRef
    from localrag.gui.views.transcript import source_line

    done = _run(engine, None, "What are the sections of the Backups document?", persist=False)[-1]
    assert done.evidence is not None and done.evidence.kind == "outline" and done.sources
    assert all(s.score is None for s in done.sources)
    line = source_line(1, SourceRef.from_source(done.sources[0], 1), 0, "#000")
    assert "score" not in line
    searched = _run(engine, None, "How do I back up my library?", persist=False)[-1]
    assert searched.sources and all(s.score is not None for s in searched.sources)


# -- follow-ups --------------------------------------------------------------------------------------------

# (previous question, question): about this project's README. Each of these leans on the one before.
FOLLOW_UPS = [
    ("How do I install Local RAG on Linux?", "and on Windows?"),
    ("Where does Local RAG keep my data?", "Can I move it to another disk?"),
    ("How do I start the HTTP API?", "Which port does it listen on?"),
    ("What does local-rag doctor check?", "Why?"),
    ("How do I re-embed my documents after switching models?", "How long does that take?"),
    ("Which file formats can I add?", "What about scanned PDFs?"),
    ("How do I run a team server?", "Is it faster?"),
    ("Which shortcut opens the developer pane?", "And the settings?"),
    ("How do I remove a document?", "Does this delete the file on disk?"),
    ("Which CPU kernels does the app load?", "Which one is faster?"),
    ("Can I use another PostgreSQL server?", "Are my chats kept there?"),
]
# Each of these is a question of its own, however short, and even with "it", "that" or "there" in it.
NEW_QUESTIONS = [
    ("How do I read a data file into a data frame in R?", "What is a factor?"),
    ("How do I install Local RAG on Linux?", "What is pgvector?"),
    ("Where does Local RAG keep my data?", "How do I start the HTTP API?"),
    ("How do I run a team server?", "Is it possible to run Local RAG without a window?"),
    ("What does local-rag doctor check?", "Is there a way to force the dark theme?"),
    ("How do I add documents?", "How do I create a chat and rename it?"),
    ("How do I remove a document?", "How do I check that a document was indexed?"),
    ("Which file formats can I add?", "Which shortcut stops an answer?"),
    ("How do I build the archive?", "What is OCR?"),
    ("How do I use the API?", "Why does PostgreSQL refuse to run as root?"),
    ("How do I add a folder?", "What does Ctrl+D open?"),
]


@pytest.mark.parametrize(("before", "question"), FOLLOW_UPS)
def test_a_follow_up_is_searched_with_the_question_before(before, question):
    assert follow_up_query(question, [before]) == f"{before} {question}"


@pytest.mark.parametrize(("before", "question"), NEW_QUESTIONS)
def test_a_new_question_is_searched_alone(before, question):
    assert follow_up_query(question, [before]) == question


def test_a_short_new_question_is_not_searched_with_the_one_before(engine):
    """ "What is a factor?" after a question on data frames is searched alone and answered from the page on
    factors, not from the data frames' page."""
    first = _run(engine, None, "How do I read a data file into a data frame in R?")[-1]
    assert first.sources[0].path.endswith("r-data.md")
    events = _run(engine, first.chat_id, "What is a factor?")
    assert next(e for e in events if isinstance(e, Searching)).query == "What is a factor?"
    retrieved = next(e for e in events if isinstance(e, Retrieved))
    assert retrieved.query == "What is a factor?"
    ready = next(e for e in events if isinstance(e, EvidenceReady))
    assert ready.evidence.answered and retrieved.sources[ready.evidence.spans[0].number - 1].path.endswith(
        "r-factors.md"
    )


def test_a_question_that_finds_nothing_alone_is_searched_with_the_topic_before(engine):
    """ "Should I quit first?" names no topic the library knows; with the backup question before it, the
    joined search finds the backup page, which says to quit the app. An off-topic question after the same
    backup question is not answered from the backup page."""
    first = _run(engine, None, "How do I back up my library?")[-1]
    events = _run(engine, first.chat_id, "Should I quit first?")
    retrieved = next(e for e in events if isinstance(e, Retrieved))
    assert retrieved.query == "How do I back up my library? Should I quit first?"
    assert retrieved.sources[0].path.endswith("backup.md")
    events = _run(engine, first.chat_id, OFF_TOPIC[0])
    assert next(e for e in events if isinstance(e, Retrieved)).query == OFF_TOPIC[0]
    assert events[-1].basis == NOT_ANSWERED


# -- the command line --------------------------------------------------------------------------------------


def _ask(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOCALRAG_N_CTX": "2048", "LOCALRAG_THREADS": "1"}
    cmd = [sys.executable, "-m", "localrag", "ask", *args, "--max-tokens", "12"]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300, env=env)


def test_ask_says_the_documents_do_not_answer_and_how_to_ask_the_model(corpus):
    out = _ask(OFF_TOPIC[3])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Your documents do not seem to answer this"), out.stdout
    assert "The closest passages:" in out.stdout and "--no-documents" in out.stdout
    data = json.loads(_ask(OFF_TOPIC[3], "--json").stdout)
    assert data["not_found"] is True and data["basis"] == "not_found" and data["generated"] == []
    alone = _ask(OFF_TOPIC[1], "--no-documents")
    assert alone.returncode == 0, alone.stderr
    label, _, words = alone.stdout.partition("\n")
    assert label == MODEL_ALONE_LABEL and words.strip()
