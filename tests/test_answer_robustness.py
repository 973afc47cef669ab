"""Nothing a question can do crashes an answer: every text is sized to the embedding model's input, a fault in
evidence, rewording or checking degrades to the passages found, and 1,000 generated questions end in ``Done``.

Real parts: PDFs written here and indexed by the real pipeline into the real embedded PostgreSQL, the real
ONNX embedding model, the real GGUF. The only fakes inject a fault into one step, and each says so.
"""

from __future__ import annotations

import logging
import random
import time
import unicodedata

import pytest

from fixtures_chat import changed_settings, index
from fixtures_docs import manual_pdf, write_pdf
from localrag.core.answer import run as engine_module
from localrag.core.answer.engine import ChatEngine
from localrag.core.answer.events import Checked, Done, EvidenceReady, Failed, Token
from localrag.core.answer.quotes import NOT_FOUND_TEXT
from localrag.core.answer.request import AskRequest
from localrag.core.config import Settings
from localrag.core.embed.sizing import fit_to_input, fits
from localrag.core.llm.llm import load_llm

# A line of a PDF with no space in 1,000 characters, cut by punctuation into far more word pieces than the
# embedding model reads (the shape of a long path or option list in a real manual).
LONG_RUN = ("systemd-analyze/blame:units,ranked;by-start-up_time." * 20)[:1000]
BOOT = [
    "Systemd boot performance",
    "The command systemd-analyze blame ranks the units by how long each took to start.",
    "Run systemd-analyze critical-chain to see the chain of units that delayed the boot.",
    LONG_RUN,
    "A slow unit can be masked or started later with a timer.",
]
NETWORK = [
    "Network configuration",
    "The file /etc/network/interfaces configures the network interfaces on Debian.",
    "Run ip addr show to list the addresses of every interface.",
    "The default MTU of an Ethernet interface is 1500 bytes.",
]
TABLE = [
    "Table 3. Disk usage by folder",
    "Folder Size Files",
    "/var/log 1,204 MB 3,512",
    "/home 52,877 MB 120,044",
    "/usr 7,311 MB 210,993",
]
QUESTION = "My machine boots slowly under systemd. Which command ranks units by how long each took to start?"


@pytest.fixture(scope="module")
def pdf_library(library, tmp_path_factory):
    """Three real PDFs (a manual with an outline, a guide with a 1,000-character line without spaces, a page
    of figures), indexed through the real pipeline."""
    folder = tmp_path_factory.mktemp("robust-pdfs")
    manual_pdf(folder / "manual.pdf")
    write_pdf(
        folder / "admin-guide.pdf",
        [BOOT, NETWORK],
        outline=[("Systemd boot performance", 0, None), ("Network configuration", 1, None)],
        title="Administration Guide",
    )
    write_pdf(folder / "disk-report.pdf", [TABLE], title="Disk Report")
    index(library, [folder], ready=3)
    return library


@pytest.fixture(scope="module")
def llm(home):
    return load_llm(Settings(n_ctx=2048, threads=1, fast_llm_copy=False))


def _events(engine: ChatEngine, question: str, **kw) -> list:
    kw.setdefault("persist", False)
    return list(engine.ask(AskRequest(question, **kw)))


# -- sizing --------------------------------------------------------------------------------------------------


def test_every_text_is_cut_to_the_models_input_at_a_word_piece(embedder):
    limit = embedder.max_tokens
    short, empty, unbroken = "How long did each unit take?", "", "a" * 5000
    texts = [short, LONG_RUN, empty, unbroken, "é" * 3000, "🙂" * 600, "x" + "\u0301" * 2000]
    fitted = fit_to_input(embedder, texts)
    assert fitted[0] == short and fitted[2] == empty
    assert embedder.count_tokens(LONG_RUN) > limit  # the case itself is too long for the model
    for original, cut in zip(texts, fitted, strict=True):
        assert original.startswith(cut)
        assert embedder.count_tokens(cut) <= limit
    assert (
        len(fitted[1]) < len(LONG_RUN) and embedder.count_tokens(fitted[1]) >= limit - 8
    )  # cut, not emptied
    assert fits(embedder, short) and not fits(embedder, LONG_RUN)
    assert embedder.embed(fitted).shape == (len(texts), embedder.dimension)


# -- the regression: a PDF line longer than the model's input reaching evidence ------------------------------


def test_a_pdf_line_longer_than_the_models_input_reaching_evidence_is_cut_not_an_error(
    pdf_library, monkeypatch
):
    """Before: ``Internal error (ValueError: 1 text(s) exceed the embedding model's 256-token input …)``."""
    seen: list[str] = []
    real = pdf_library.embed_texts

    def recording(texts, cancel=None):  # records what evidence sends to the model; the model is real
        seen.extend(texts)
        return real(texts, cancel=cancel)

    monkeypatch.setattr(pdf_library, "embed_texts", recording)
    with changed_settings(pdf_library, answer_lead="sources", reword=False):
        events = _events(ChatEngine(pdf_library, None), QUESTION)
    assert not [e for e in events if isinstance(e, Failed)], events[-1]
    done = events[-1]
    assert isinstance(done, Done) and not done.notice
    too_long = [t for t in seen if pdf_library.embedder.count_tokens(t) > pdf_library.embedder.max_tokens]
    assert too_long, "the 1,000-character line did not reach the evidence as a candidate sentence"
    assert "systemd-analyze blame ranks the units" in done.answer


# -- faults degrade to the passages found --------------------------------------------------------------------


def test_a_fault_in_evidence_lists_the_passages_with_a_notice_and_logs_the_traceback(
    pdf_library, monkeypatch, caplog
):
    def broken(*args, **kw):  # a fake: injects a bug into the evidence step
        raise ZeroDivisionError("injected")

    monkeypatch.setattr(engine_module, "find_evidence", broken)
    with changed_settings(pdf_library, answer_lead="sources", reword=False), caplog.at_level(logging.ERROR):
        events = _events(ChatEngine(pdf_library, None), QUESTION)
    assert not [e for e in events if isinstance(e, Failed)]
    done = events[-1]
    assert isinstance(done, Done) and done.sources
    assert done.answer == NOT_FOUND_TEXT and done.evidence is not None and done.evidence.closest
    assert "could not be picked" in done.notice and "localrag.log" in done.notice
    assert "Internal error" not in done.notice and "\n" not in done.notice
    bug = [r for r in caplog.records if r.exc_info and "injected" in str(r.exc_info[1])]
    assert bug and bug[0].levelno == logging.ERROR


def test_a_fault_while_checking_the_rewording_keeps_the_quoted_answer(pdf_library, llm, monkeypatch, caplog):
    from localrag.core.answer.support import SupportChecker

    def broken(self, sentence):  # a fake: injects a bug into the check of the model's sentences
        raise KeyError("injected")

    monkeypatch.setattr(SupportChecker, "check", broken)
    with (
        changed_settings(pdf_library, answer_lead="sources", reword=True),
        caplog.at_level(logging.ERROR),
    ):
        events = _events(ChatEngine(pdf_library, llm), QUESTION, max_tokens=24)
    assert not [e for e in events if isinstance(e, Failed)]
    ready = next(e for e in events if isinstance(e, EvidenceReady))
    done = events[-1]
    assert isinstance(done, Done) and done.answer == ready.text and not done.generated
    assert "could not be checked" in done.notice and "quoted from your documents" in done.notice
    assert any(r.exc_info and "injected" in str(r.exc_info[1]) for r in caplog.records)


def test_a_fault_in_the_models_stream_keeps_the_quoted_answer(pdf_library, llm, monkeypatch):
    real, pieces = llm.stream, []

    def breaking(*args, **kw):  # a fake: the real model's stream, broken after its first pieces
        for piece in real(*args, **kw):
            pieces.append(piece)
            yield piece
            if len(pieces) == 4:
                raise RuntimeError("injected")

    monkeypatch.setattr(llm, "stream", breaking)
    with changed_settings(pdf_library, answer_lead="sources", reword=True):
        events = _events(ChatEngine(pdf_library, llm), QUESTION, max_tokens=24)
    assert len(pieces) == 4  # the model had started
    done = events[-1]
    ready = next(e for e in events if isinstance(e, EvidenceReady))
    assert isinstance(done, Done) and done.answer == ready.text
    assert "rewording stopped" in done.notice


# -- 1,000 generated questions -------------------------------------------------------------------------------

WORDS = (
    "systemd boot unit start slow command network interface disk folder size manual installer log chapter "
    "appendix table reference Debian Linux file configure default MTU address timer chain"
).split()
STOP = "the of and to a in is it that for on was with as by at an be this which or from".split()
CODE = [
    "for (int i = 0; i < n; ++i) { x[i] = y[i] * 2; }",
    "SELECT * FROM documents WHERE id = 1; DROP TABLE documents; --",
    "def f(x):\n    return {k: v for k, v in x.items() if v}",
    "$(rm -rf /) && echo `id` | tee /etc/passwd",
    "<script>alert('x')</script><img src=x onerror=alert(1)>",
    '{"query": [1, 2, {"a": null}], "k": -1}',
    "\\begin{equation} \\sum_{i=1}^{n} i^2 \\end{equation}",
]
UNICODE = [
    "🙂🚀🔥 how do I start 👩‍👩‍👧‍👦 units? 🇫🇷",
    "كيف أبدأ تشغيل الوحدات بسرعة؟",
    "איך מפעילים את השירות מחדש?",
    "e\u0301\u0302\u0303\u0304" * 50,
    "Z\u0351\u0352\u0353a\u0354\u0355l\u0356g\u0357o" * 30,
    "起動が遅いのはなぜですか？systemd",
    "Ｆｕｌｌｗｉｄｔｈ ｑｕｅｓｔｉｏｎ？",
    "\u202eevitcejbo\u202c RTL override",
    "\ufeff\u200b\u200d zero width\u2060joiners",
]
CONTROLS = "".join(chr(c) for c in [*range(1, 32), 127])
INTENTS = [
    "Summarize {}",
    "What are the sections of {}?",
    "Which documents mention {}?",
    "List the tables in {}",
]


def _questions(n: int, seed: int = 20261125) -> list[str]:
    rng = random.Random(seed)

    def words(k: int) -> str:
        return " ".join(rng.choice(WORDS + STOP) for _ in range(k))

    makers = [
        lambda: words(rng.randint(1, 12)) + rng.choice(["?", "", ".", "!?"]),
        lambda: words(rng.randint(900, 1200)),  # 5,000+ characters
        lambda: rng.choice(CODE),
        lambda: rng.choice(UNICODE) + " " + words(rng.randint(0, 4)),
        lambda: rng.choice(["", " ", "\t\n ", "\u3000", "\n" * 50]),
        lambda: " ".join(rng.choice(STOP) for _ in range(rng.randint(1, 8))),
        lambda: rng.choice("a?.7é🙂—中x/\\"),
        lambda: rng.choice(["a", "x/", "-_", "9", "é"]) * rng.randint(300, 3000),
        lambda: "".join(rng.choice(CONTROLS + "ab ") for _ in range(rng.randint(1, 80))),
        lambda: rng.choice(INTENTS).format(rng.choice(["Administration Guide", "the manual", words(2), ""])),
        lambda: "".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 60))),
        lambda: QUESTION[: rng.randint(1, len(QUESTION))] + LONG_RUN[: rng.randint(0, 1000)],
    ]
    # Every kind of question in turn; one in fifty is a very long one (the model reads its first 256 word
    # pieces: each costs as much as twenty short ones).
    plan = [i % len(makers) for i in range(n)]
    plan = [1 if i % 50 == 25 else (k if k != 1 else 0) for i, k in enumerate(plan)]
    out = [makers[k]() for k in plan]
    rng.shuffle(out)
    assert all("\x00" not in q for q in out)
    return out


@pytest.mark.timeout(900)  # about 40 s of CPU time; a machine shared with other work may take far longer
def test_a_thousand_generated_questions_all_end_in_an_answer(pdf_library, llm, caplog):
    """Every question ends in ``Done`` (an empty one in the known "Type a question first."), with no internal
    error, no step degraded by a fault, and nothing logged as a bug. Most stop after the evidence (the sources
    lead, no rewording, strict: no model is loaded); every 40th goes through the real model's rewording and
    checking, or its answer alone when nothing relevant is found."""
    questions = _questions(1000)
    assert sum(len(q) >= 5000 for q in questions) >= 20
    assert any(unicodedata.category(c) == "Mn" for q in questions for c in q)
    sources_only, with_model = ChatEngine(pdf_library, None), ChatEngine(pdf_library, llm)
    started, cpu = time.monotonic(), time.process_time()
    ended = {"done": 0, "empty": 0, "model": 0}
    with changed_settings(pdf_library, answer_lead="sources"), caplog.at_level(logging.ERROR):
        for i, question in enumerate(questions):
            full = i % 40 == 0 and question.strip() and len(question) < 2000
            pdf_library.settings.reword = bool(full)
            engine = with_model if full else sources_only
            # Without a model, strict: a question nothing answers gets the fixed "not found" answer.
            events = _events(engine, question, max_tokens=12, strict=not full)
            last = events[-1]
            failed = [e for e in events if isinstance(e, Failed)]
            if not question.strip():
                assert failed == [last] and last.known and last.message == "Type a question first.", question
                ended["empty"] += 1
                continue
            assert not failed, (question[:200], failed)
            assert isinstance(last, Done), (question[:200], last)
            assert "a fault" not in last.notice, (question[:200], last.notice)
            ended["done"] += 1
            ended["model"] += bool(full) and any(isinstance(e, Token | Checked) for e in events)
    bugs = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bugs, [(r.getMessage(), r.exc_info) for r in bugs[:3]]
    assert ended["done"] + ended["empty"] == 1000 and ended["empty"] > 0 and ended["model"] >= 5, ended
    print(
        f"1,000 questions in {time.monotonic() - started:.1f} s "
        f"({time.process_time() - cpu:.1f} s of CPU): {ended}"
    )
