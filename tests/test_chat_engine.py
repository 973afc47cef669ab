"""The chat engine end to end: real documents, real store, real GGUF. Events in order, the toggle, strict
mode, citations, follow-ups, history, and the failures (the LLM cannot load, the store is down)."""

from __future__ import annotations

import threading
import time

import pytest

from fixtures_chat import index
from localrag.core.answer import cross, history
from localrag.core.answer.citations import check_citations
from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import (
    Checked,
    Done,
    EvidenceReady,
    Failed,
    Retrieved,
    Searching,
    Token,
    WarmingUp,
)
from localrag.core.answer.prompts import NOT_FOUND, Prompt
from localrag.core.answer.query import follow_up_query, is_follow_up
from localrag.core.answer.request import AskRequest
from localrag.core.config import Settings
from localrag.core.errors import StoreUnavailable
from localrag.core.llm.llm import LocalLLM, load_llm
from localrag.core.llm.provider import LLMProvider
from localrag.core.progress import CancelToken
from localrag.core.retrieve import retrieve

DOCS = {
    "install.md": (
        "# Installing Local RAG\n\n## Linux\n\nOn Linux, install Local RAG with pip: run `pip install "
        "local-rag` in a terminal. The app needs Python 3.10 or newer. Start it with the command "
        "`local-rag`.\n\n## Windows\n\nOn Windows, download the installer LocalRAG-Setup.exe and "
        "double-click it. The installer puts a shortcut in the Start menu.\n"
    ),
    "backup.md": (
        "# Backups\n\nLocal RAG keeps its database in the data folder. To back up your library, quit the app "
        "and copy the whole data folder to another disk.\n\nTo restore a backup, quit the app, replace the "
        "data folder with the copy, and start the app again.\n\nThe default backup interval recommended by "
        "the team is once a week.\n"
    ),
    "garden.txt": (
        "Tomatoes need at least six hours of direct sunlight every day. Water them deeply twice a week "
        "rather than a little every day.\n\nBasil grows well next to tomatoes. Pinch off the flower buds of "
        "basil to keep the leaves tender.\n\nCompost made from kitchen scraps feeds the soil. Turn the "
        "compost pile every two weeks so it gets air.\n"
    ),
}


@pytest.fixture(scope="module")
def corpus(library, tmp_path_factory):
    """The three documents above, ingested through the real pipeline into an emptied store."""
    folder = tmp_path_factory.mktemp("chatdocs")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index(library, [folder], ready=len(DOCS))
    return library


@pytest.fixture(scope="module")
def llm(home) -> LocalLLM:
    return load_llm(Settings(n_ctx=2048))


@pytest.fixture()
def engine(corpus, llm) -> ChatEngine:
    return ChatEngine(corpus, llm)


def _run(engine: ChatEngine, chat_id: int | None, question: str, **kw) -> list:
    kw.setdefault("max_tokens", 24)
    return list(engine.ask(AskRequest(question, chat_id=chat_id, **kw)))


def _kinds(events: list) -> list[str]:
    out: list[str] = []
    for e in events:
        name = type(e).__name__
        if not (name == "Token" and out and out[-1] == "Token"):
            out.append(name)
    return out


def test_grounded_answer_streams_events_in_order(engine, monkeypatch):
    """The sentence that answers comes from the sources before the model runs; the model's rewording (when
    turned on) follows, each sentence checked, and only supported ones join the answer."""
    monkeypatch.setattr(engine.settings, "reword", True)
    events = _run(engine, None, "How do I install Local RAG on Windows?")
    kinds = _kinds(events)
    assert kinds[:5] == ["Searching", "Retrieved", "EvidenceReady", "Prompt", "Token"] and kinds[-1] == "Done"
    retrieved, ready, done = events[1], events[2], events[-1]
    assert retrieved.sources and retrieved.sources[0].title == "Installing Local RAG"
    assert ready.lead == "sources" and ready.evidence.answered  # the bundled model is small: the sources lead
    assert "LocalRAG-Setup.exe" in ready.text and ready.evidence.spans[0].number == 1
    assert events[3].prompt_tokens <= 2048 - 24
    assert done.answer.startswith(ready.text)
    checked = [e for e in events if isinstance(e, Checked)]
    for c in checked:
        assert (c.sentence.shown() in done.answer) == c.shown == c.sentence.supported
    assert done.evidence is ready.evidence and done.lead == "sources"
    assert done.chat_id is not None and done.message_id is not None
    assert (
        done.timings["evidence_at_s"] > 0 and done.timings["retrieval_s"] > 0 and done.timings["tokens"] > 0
    )
    with engine.library.connect() as conn:
        stored = history.load_messages(conn, done.chat_id)[-1]
    assert (
        stored.parts is not None
        and stored.parts["evidence"]["spans"][0]["text"] == ready.evidence.spans[0].text
    )


def test_with_rewording_off_the_answer_is_the_evidence_and_no_model_runs(engine):
    assert not engine.settings.reword  # the default
    events = _run(engine, None, "How do I install Local RAG on Windows?", persist=False)
    assert _kinds(events) == ["Searching", "Retrieved", "EvidenceReady", "Done"]
    done = events[-1]
    assert done.answer == done.evidence.text() and "tokens" not in done.timings
    assert done.citations.cited == [1] and done.sources[0].cited


def test_a_quoted_source_is_named_by_the_section_the_quote_is_in(engine):
    """install.md's first chunk starts at its title, a bare heading that runs on into the Linux section (which
    begins inside the chunk and is kept with it); the sentence quoted for Linux names its source by the Linux
    section, as the window shows it, not by the title the chunk starts under."""
    with engine.library.connect() as conn:
        first = conn.execute(
            "SELECT c.heading_path, c.headings FROM document_chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE d.path LIKE '%%install.md' ORDER BY c.chunk_index LIMIT 1"
        ).fetchone()
    assert first[0] == "Installing Local RAG" and [p for _, p in first[1]] == ["Installing Local RAG > Linux"]
    done = _run(engine, None, "How do I install Local RAG on Linux?", persist=False)[-1]
    span = done.evidence.spans[0]
    assert "pip install" in span.text and span.section == "Installing Local RAG > Linux"
    assert done.sources[span.number - 1].where().endswith("— Installing Local RAG > Linux")


def test_a_question_the_documents_do_not_answer_says_so_and_lists_the_closest(engine, monkeypatch):
    monkeypatch.setattr(engine.settings, "reword", False)
    done = _run(
        engine,
        None,
        "How do I install Local RAG with pip on Linux and which Python does it need?",
        persist=False,
    )[-1]
    assert done.evidence.answered  # sanity: a question they do answer
    done = _run(engine, None, "Which compost pile temperature kills tomato blight spores?", persist=False)[-1]
    if done.evidence is not None and not done.evidence.answered:
        assert "do not seem to answer" in done.answer and done.evidence.closest


def test_the_model_leads_when_asked_and_its_sentences_are_checked(engine, monkeypatch):
    monkeypatch.setattr(engine.settings, "answer_lead", "model")
    events = _run(engine, None, "How do I back up my library?", persist=False, max_tokens=60)
    ready = next(e for e in events if isinstance(e, EvidenceReady))
    assert ready.lead == "model"
    done = events[-1]
    assert done.lead == "model" and done.generated
    for g in done.generated:
        assert g.shown() in done.answer  # supported with its [n], or marked as not found
        if g.supported:
            assert g.number is not None and 1 <= g.number <= len(done.sources)


def test_citations_map_to_the_sources_given(engine):
    done = _run(engine, None, "How do I back up my library?", persist=False)[-1]
    check = check_citations(done.answer, len(done.sources))
    assert done.citations.cited == check.cited and done.citations.invalid == check.invalid
    # Whatever the model wrote, only real sources are cited, and the message keeps exactly their chunks.
    assert all(1 <= n <= len(done.sources) for n in done.citations.cited)
    expected = [c for n in done.citations.cited for c in done.sources[n - 1].chunk_ids]
    assert done.chunk_ids == list(dict.fromkeys(expected))
    assert [s.cited for s in done.sources] == [s.number in done.citations.cited for s in done.sources]
    assert [s.number for s in done.sources] == list(range(1, len(done.sources) + 1))


def test_toggle_off_is_plain_chat_without_context(engine):
    events = _run(engine, None, "How do I back up my library?", grounded=False, persist=False)
    assert _kinds(events) == ["Prompt", "Token", "Done"]
    prompt: Prompt = events[0]
    text = " ".join(m["content"] for m in prompt.messages)
    assert "data folder" not in text and "Sources" not in text and prompt.sources == []
    done = events[-1]
    assert done.sources == [] and done.chunk_ids == [] and "retrieval_s" not in done.timings


def test_strict_mode_with_nothing_relevant_says_so(engine):
    events = _run(engine, None, "What is the capital of Peru?", strict=True)
    assert _kinds(events) == ["Searching", "Retrieved", "Token", "Done"]
    done = events[-1]
    assert done.answer == NOT_FOUND and done.sources == [] and done.chunk_ids == []
    assert events[1].packed.sources == [] and events[1].sources == []  # nothing listed as a source
    with engine.library.connect() as conn:
        stored = history.load_messages(conn, done.chat_id)
    assert [m.content for m in stored] == ["What is the capital of Peru?", NOT_FOUND] and stored[1].strict


def test_follow_up_retrieves_from_the_earlier_topic(engine, monkeypatch):
    monkeypatch.setattr(engine.settings, "reword", True)
    first = _run(engine, None, "How do I back up my library?")[-1]
    follow = "How often should I do it?"
    alone = retrieve(engine.library, follow)
    assert alone.results[0].title != "Backups"  # on its own the question lands elsewhere
    events = _run(engine, first.chat_id, follow)
    searching = next(e for e in events if isinstance(e, Searching))
    assert searching.query.startswith("How do I back up my library?")
    retrieved = next(e for e in events if isinstance(e, Retrieved))
    assert retrieved.sources[0].title == "Backups"
    assert events[-1].chat_id == first.chat_id
    # The earlier exchange is in the prompt, before the new sources.
    prompt = next(e for e in events if isinstance(e, Prompt))
    contents = [m["content"] for m in prompt.messages]
    assert "How do I back up my library?" in contents


def test_follow_up_detection():
    assert is_follow_up("and on Windows?") and is_follow_up("What about it?") and is_follow_up("Why?")
    assert not is_follow_up("How much sunlight do tomatoes need each day in summer?")
    # "that" and "this" point back unless the question says what they stand for before a comma or "and"
    assert is_follow_up("How do I undo that?") and is_follow_up("Is this faster?")
    assert not is_follow_up("tabulate turns my version strings like 18.0 into numbers, how do I stop that?")
    assert not is_follow_up("My backups fill the disk and I want to limit this")
    assert follow_up_query("and on Windows?", ["How do I install it on Linux?"]).startswith(
        "How do I install"
    )
    assert follow_up_query("and on Windows?", []) == "and on Windows?"


def test_cancel_keeps_what_was_generated(engine, monkeypatch):
    monkeypatch.setattr(engine.settings, "answer_lead", "model")
    cancel = CancelToken()
    events = []
    for event in engine.ask(AskRequest("Tell me everything about backups.", cancel=cancel, max_tokens=200)):
        events.append(event)
        if sum(isinstance(e, Token) for e in events) == 3:
            cancel.cancel()
    done = events[-1]
    assert isinstance(done, Done) and done.cancelled
    assert sum(isinstance(e, Token) for e in events) == 3
    with engine.library.connect() as conn:
        stored = history.load_messages(conn, done.chat_id)
    assert stored[-1].cancelled and stored[-1].content == done.answer


def test_a_question_before_warm_up_waits_for_the_model(corpus, monkeypatch):
    monkeypatch.setattr(corpus.settings, "reword", True)
    gate = threading.Event()

    def slow_load(settings):
        gate.wait(30)
        return load_llm(settings)

    provider = LLMProvider(Settings(n_ctx=2048), loader=slow_load)
    loader = threading.Thread(target=provider.load)  # the caller decides where the model loads
    loader.start()
    while provider.state.status != "loading":
        time.sleep(0.01)
    engine = ChatEngine(corpus, provider)
    events = []
    for event in engine.ask(AskRequest("How much sun do tomatoes need?", max_tokens=8, persist=False)):
        events.append(event)
        if isinstance(event, WarmingUp):
            gate.set()
    kinds = _kinds(events)
    # The evidence does not wait for the model (the file's size says it is a small one); the rewording does.
    assert kinds[:4] == ["Searching", "Retrieved", "EvidenceReady", "WarmingUp"] and kinds[-1] == "Done"
    assert events[-1].timings["wait_s"] > 0
    loader.join()


def test_warm_up_primes_the_system_prompt(corpus):
    engine = ChatEngine(corpus, LLMProvider(Settings(n_ctx=2048)))
    engine.settings.answer_lead = "model"  # a prompt with the sources follows the primed prefix
    cross._shared.cache_clear()
    timings = engine.warm_up()
    assert engine.llm_ready and timings["prime_s"] > 0
    # The reader's cross-encoder is loaded too, so that the first question does not wait for it.
    assert "reader_s" in timings and cross._shared.cache_info().currsize == 1
    try:
        done = _run(engine, None, "How much sun do tomatoes need?", persist=False, max_tokens=4)[-1]
    finally:
        engine.settings.answer_lead = "auto"
    assert done.timings["cached_tokens"] > 100  # the system prompt and the worked example


def test_llm_load_failure_leaves_retrieval_working(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(corpus.settings, "reword", True)  # the model is wanted, and cannot load
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 4096)
    engine = ChatEngine(corpus, LLMProvider(Settings(gguf_path=str(bad), n_ctx=2048)))
    events = list(engine.ask(AskRequest("How do I install Local RAG on Windows?")))
    # The sources still answer: the evidence is the answer, and the notice says why no model reworded it.
    kinds = [type(e) for e in events if not isinstance(e, WarmingUp)]
    assert kinds == [Searching, Retrieved, EvidenceReady, Done]
    done = events[-1]
    assert done.answer == done.evidence.text() and "LocalRAG-Setup.exe" in done.answer
    assert "broken.gguf" in done.notice and "quoted from your documents" in done.notice
    assert events[1].sources[0].title == "Installing Local RAG"
    plain = list(engine.ask(AskRequest("Hello there, how are you?", grounded=False)))
    assert isinstance(plain[-1], Failed) and plain[-1].known and "broken.gguf" in plain[-1].message
    only = engine.retrieve_only("How do I install Local RAG on Windows?")
    assert only.sources[0].title == "Installing Local RAG" and only.response.reason is None
    timings = engine.warm_up()  # warm-up survives the failure too: the embedding model is warmed, not the LLM
    assert "embedder_s" in timings and "llm_load_s" not in timings and engine.provider.failed


def test_store_down_answers_ungrounded_and_says_so(llm, home):
    from localrag.core.library import Library

    library = Library(Settings(database_url="postgresql://nobody:x@127.0.0.1:9/none?connect_timeout=1"))
    with pytest.raises(StoreUnavailable):
        library.open()  # as the CLI and the window do: the failure is shown, chat goes on
    engine = ChatEngine(library, llm)
    events = _run(engine, None, "How do I back up my library?")
    retrieved = next(e for e in events if isinstance(e, Retrieved))
    assert retrieved.response.reason == "error" and retrieved.sources == []
    done = events[-1]
    assert isinstance(done, Done) and done.answer
    assert "could not be searched" in done.notice and "could not be saved" in done.notice
    assert done.message_id is None and done.sources == []
    strict = _run(engine, None, "How do I back up my library?", strict=True)[-1]
    assert strict.answer.startswith("I cannot search your documents")


def test_a_store_that_did_not_start_says_why_in_the_answer(llm, home, monkeypatch):
    """The embedded server refused to start (a fault injected in its start): the ungrounded answer's notice
    gives that reason, not "not open yet"."""
    from localrag.core import library as library_module

    reason = "The data folder is on a read-only disk."

    def refuse(_server):
        raise StoreUnavailable(reason)

    monkeypatch.setattr(library_module.EmbeddedServer, "start", refuse)
    library = library_module.Library(Settings())
    with pytest.raises(StoreUnavailable):
        library.open()
    done = _run(ChatEngine(library, llm), None, "How do I back up my library?")[-1]
    assert isinstance(done, Done) and reason in done.notice


def test_a_bug_in_retrieval_is_an_internal_error_not_the_store_being_down(engine, monkeypatch, caplog):
    """A ``ProgrammingError`` (a bug in our SQL) is not "your documents could not be searched": the answer
    fails as an internal error that names the log, and the traceback is logged."""
    import logging

    import psycopg

    from localrag.core.retrieve import retrieve, retriever

    def broken_fetch(
        conn, *_args, **_kwargs
    ):  # the fault injected: a query with a typo, on the real database
        return conn.execute("SELECT no_such_column FROM documents").fetchall()

    monkeypatch.setattr(retriever, "_fetch", broken_fetch)
    with pytest.raises(psycopg.errors.UndefinedColumn):
        retrieve(engine.library, "How do I install Local RAG on Windows?")
    with caplog.at_level(logging.ERROR):
        events = _run(engine, None, "How do I install Local RAG on Windows?")
    failed = events[-1]
    assert isinstance(failed, Failed) and not failed.known
    assert failed.message.startswith("Internal error") and "UndefinedColumn" in failed.message
    assert "localrag.log" in failed.message
    assert not any(isinstance(e, Retrieved) for e in events)  # nothing pretended the store was down
    assert any(
        r.exc_info and isinstance(r.exc_info[1], psycopg.errors.UndefinedColumn) for r in caplog.records
    )


def test_empty_question_fails_plainly(engine):
    assert _kinds(list(engine.ask(AskRequest("   ")))) == ["Failed"]


def test_cli_ask_json(corpus, home):
    import json
    import os
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "localrag",
            "ask",
            "How do I install Local RAG on Windows?",
            "--json",
            "--max-tokens",
            "16",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LOCALRAG_N_CTX": "2048"},
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["answer"] and data["sources"][0]["path"].endswith("install.md")
    assert {"path", "page_number", "chunk_ids"} <= set(data["sources"][0])
    assert {"retrieval_s", "evidence_at_s"} <= set(data["timings"])
    evidence = data["evidence"][0]
    assert evidence["path"].endswith("install.md") and evidence["number"] == 1
    assert {"text", "page_number", "char_start", "char_end", "score"} <= set(evidence)
    assert data["answer"].startswith(evidence["text"].split()[0])
    assert all({"text", "supported"} <= set(g) for g in data["generated"])
    assert data["chat_id"] is None  # nothing kept without --save


def test_weak_passages_next_to_a_strong_one_are_left_out():
    """A passage that clears the floor only just is noise next to one that matches well; alone it is kept."""
    from localrag.core.answer.query import relevant
    from localrag.core.retrieve import Result

    def passage(title: str, cosine: float | None, bm25_rank: int | None = None) -> Result:
        return Result(
            chunk_ids=[1],
            doc_id=1,
            doc_type="markdown",
            title=title,
            path=f"/{title}.md",
            page_number=1,
            heading_path="",
            text=title,
            similarity=cosine or 0.0,
            scores={"vector": cosine, "bm25_rank": bm25_rank},
        )

    tides, moon, glacier = (
        passage("tides", 0.72),
        passage("moon", 0.41),
        passage("glacier", 0.27, bm25_rank=3),
    )
    assert [r.title for r in relevant([tides, moon, glacier])] == ["tides", "moon"]
    assert [r.title for r in relevant([glacier, passage("noise", 0.2)])] == ["glacier"]
    assert [r.title for r in relevant([tides, glacier], strict=True)] == ["tides"]
    keyword_only = [passage("a", None, 1), passage("b", None, 2)]
    assert relevant(keyword_only) == keyword_only


def test_a_question_prepared_while_typed_starts_from_the_cache(engine, monkeypatch):
    """Evaluated while it is typed, the question's prompt is what the model continues from when it is
    asked."""
    monkeypatch.setattr(engine.settings, "answer_lead", "model")
    question = "How do I back up my library?"
    prepared = engine.prepare(AskRequest(question))
    assert prepared > 100  # system prompt, sources and question
    done = _run(engine, None, question)[-1]
    assert isinstance(done, Done) and done.answer
    assert done.timings["prompt_tokens"] == prepared
    assert done.timings["cached_tokens"] >= prepared - 1
    # Typing went on (or the question was sent): nothing is prepared, and the next answer is unaffected.
    stopped = CancelToken()
    stopped.cancel()
    assert engine.prepare(AskRequest("What do tomatoes need?", cancel=stopped)) == 0
    assert engine.prepare(AskRequest("   ")) == 0
    again = _run(engine, None, "What do tomatoes need?")[-1]
    assert (
        isinstance(again, Done)
        and again.answer
        and again.timings["cached_tokens"] < again.timings["prompt_tokens"]
    )


def test_a_name_no_document_mentions_is_said_beside_the_answer(engine):
    """The passages found for a question about something the library never names are about something else:
    the answer says which of its names no document mentions, and only those."""
    from localrag.core.answer.notices import question_names

    assert question_names("Can I back up Local RAG to Dropbox or to S3?") == ["Local", "RAG", "Dropbox", "S3"]
    assert question_names("How do I install it? Which version of numpy.linalg?") == ["numpy.linalg"]
    done = _run(engine, None, "Can I back up Local RAG to Dropbox or to S3?", persist=False)[-1]
    assert "None of your documents mentions “Dropbox” or “S3”." in done.notice
    done = _run(engine, None, "How do I install Local RAG on Windows?", persist=False)[-1]
    assert "None of your documents" not in done.notice
    # A name the index's parser reads as one token, written in the documents inside a longer one
    # ("LocalRAG-Setup.exe"), counts as mentioned when its parts are.
    done = _run(engine, None, "Where does Setup.exe put the Start menu shortcut?", persist=False)[-1]
    assert "None of your documents" not in done.notice
