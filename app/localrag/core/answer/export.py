"""A chat written out with its sources: Markdown, or one self-contained HTML file (no Qt; the window prints
that HTML to PDF, and ``local-rag chat export`` writes all three).

Each question is followed by its answer as the window shows it: the sentences quoted from the documents, each
with its document, page ("p. 33 (PDF page 39)" when the printed number differs) and a link that opens that
page (``file:///…#page=N`` for a local PDF); the model's sentences with their check (✓ with the source that
supports it, or ✗ not found in the documents); the notice, if any; and the sources the answer rests on.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from localrag.core.answer.citations import Source
from localrag.core.answer.compare_table import NOTHING, Comparison
from localrag.core.answer.events import MODEL, MODEL_ALONE, MODEL_ALONE_LABEL, SOURCES
from localrag.core.answer.history import Chat, Message, get_chat, load_messages
from localrag.core.answer.notices import NOT_ANSWERED_TEXT
from localrag.core.answer.quotes import NEAREST, Evidence, EvidenceSpan
from localrag.core.answer.support import NOT_FOUND_MARK, CheckedSentence
from localrag.core.errors import KnownError
from localrag.core.retrieve.results import page_phrase
from localrag.core.text import spans as sp

FORMATS = ("md", "html", "pdf")
FROM_DOCUMENTS = "From your documents:"
REWORDED = "In other words (the model, checked against your documents):"
MODEL_ANSWER = "The model's answer, checked against your documents:"
CLOSEST = "The closest passages:"
SOURCES_HEADING = "Sources"
COMPARED = "Side by side, from your documents:"


@dataclass
class Line:
    """One sentence of an answer: quoted from a source, or generated and checked (``checked``: ✓ or ✗)."""

    text: str
    number: int | None = None  # the source it is from or supported by
    where: str = ""  # document, page
    link: str = ""
    checked: bool | None = None  # None: a quotation


@dataclass
class Exchange:
    """A question and its answer, made ready to write."""

    question: str
    asked_at: dt.datetime | None = None
    label: str = ""  # what heads the answer's own text (the model alone…)
    text: str = ""  # the answer as plain text, when it has no parts (plain chat, an overview, an old answer)
    blocks: list[tuple[str, list[Line]]] = field(default_factory=list)  # (heading, lines) in order shown
    notice: str = ""
    sources: list[Line] = field(default_factory=list)
    stopped: bool = False
    # A comparison: each side's name with its quoted cell (None: nothing found there), and what changed.
    table: list[tuple[str, Line | None]] = field(default_factory=list)
    change: str = ""


def link_for(path: str, page_number: int | None, doc_type: str = "") -> str:
    """A link that opens the file at that page: ``file:///…#page=N`` for a PDF, the file itself otherwise;
    "" for a path that is not absolute."""
    if not path:
        return ""
    if PureWindowsPath(path).drive:
        uri = "file:///" + quote(path.replace("\\", "/"), safe="/:")
    elif PurePosixPath(path).is_absolute():
        uri = "file://" + quote(path, safe="/")
    else:
        return ""
    is_pdf = doc_type == "pdf" or path.lower().endswith(".pdf")
    return f"{uri}#page={int(page_number)}" if is_pdf and page_number else uri


def _where(title: str, path: str, doc_type: str, page: int, label: str = "") -> str:
    name = title or PurePosixPath(path.replace("\\", "/")).name
    if doc_type == "pdf" or page > 1:
        return f"{name}, {page_phrase(page, label)}"
    return name


def exchanges(messages: Sequence[Message]) -> list[Exchange]:
    """The chat's questions with their answers, in order."""
    out: list[Exchange] = []
    for m in messages:
        if m.role == "user":
            out.append(Exchange(m.content, m.created_at))
        elif m.role == "assistant":
            if not out or out[-1].text or out[-1].blocks:
                out.append(Exchange(""))
            _fill(out[-1], m)
    return out


def _quote_line(span: EvidenceSpan, sources: list[Source]) -> Line:
    """A quoted sentence with its source's number, where it is and a link to its page."""
    kind = _doc_type(sources, span.number)
    where = _where(span.title, span.path, kind, span.page_number, span.page_label)
    return Line(span.shown, span.number, where, link_for(span.path, span.page_number, kind))


def _fill(ex: Exchange, m: Message) -> None:
    sources = m.sources
    parts = m.parts or {}
    evidence = Evidence.from_dict(parts.get("evidence"))
    lead = str(parts.get("lead") or "") if evidence is not None else ""
    generated = [CheckedSentence.from_dict(g) for g in parts.get("generated") or [] if isinstance(g, dict)]
    ex.notice, ex.stopped = m.notice, m.cancelled
    if m.timings.get("basis") == MODEL_ALONE or (not m.grounded and evidence is None):
        ex.label = MODEL_ALONE_LABEL
    used: set[int] = set()
    quoted: list[Line] = []
    if evidence is not None and evidence.answered:
        for span in evidence.spans:
            quoted.append(_quote_line(span, sources))
            used.add(span.number)
    checked = [_checked(g, sources) for g in _kept(lead, evidence, generated, m.strict)]
    used |= {line.number for line in checked if line.number is not None and line.checked}
    if evidence is None or (evidence.answered and evidence.kind in _OVERVIEW_KINDS):
        ex.text = m.content  # no parts, or an answer about whole documents: its text is the answer
    elif not evidence.answered:
        ex.text = NOT_ANSWERED_TEXT
        for span in evidence.nearest[:1]:
            if 1 <= span.number <= len(sources):
                ex.blocks.append((NEAREST, [_quote_line(span, sources)]))
        closest = [n for n in evidence.closest if 1 <= n <= len(sources)] or list(
            range(1, min(len(sources), 3) + 1)
        )
        ex.blocks.append((CLOSEST, [_source_line(sources[n - 1]) for n in closest]))
        used |= set(closest)
    elif (table := Comparison.from_dict(evidence.comparison)) is not None:  # the quotes are its cells
        cells = [quoted[c.span] if 0 <= c.span < len(quoted) else None for c in table.columns]
        ex.table = [(c.side.name, line) for c, line in zip(table.columns, cells, strict=True)]
        ex.change = table.change
        ex.blocks += [(MODEL_ANSWER, checked)] if lead == MODEL else [(REWORDED, checked)]
    elif lead == MODEL:
        ex.blocks += [(MODEL_ANSWER, checked), (FROM_DOCUMENTS, quoted)]
    else:
        ex.blocks += [(FROM_DOCUMENTS, quoted), (REWORDED, checked)]
    ex.blocks = [(heading, lines) for heading, lines in ex.blocks if lines]
    if ex.text:
        used |= {s.number for s in sources if s.cited or s.quoted or f"[{s.number}]" in ex.text}
    ex.sources = [_source_line(s) for s in sources if s.number in used or s.cited]


_OVERVIEW_KINDS = frozenset({"outline", "summary", "compare", "which_documents"})


def _doc_type(sources: Sequence[Source], number: int) -> str:
    return sources[number - 1].doc_type if 1 <= number <= len(sources) else ""


def _kept(
    lead: str, evidence: Evidence | None, generated: list[CheckedSentence], strict: bool
) -> list[CheckedSentence]:
    """The generated sentences the answer shows (as the window does): the supported ones, and when the model
    leads (not in strict mode) the unsupported ones too; a rewording that repeats a quotation is left out."""
    keep_unsupported = lead == MODEL and not strict
    quoted = (
        {sp.folded(s.text) for s in evidence.spans} if lead == SOURCES and evidence is not None else set()
    )
    return [g for g in generated if (g.supported or keep_unsupported) and sp.folded(g.text) not in quoted]


def _checked(g: CheckedSentence, sources: Sequence[Source]) -> Line:
    supported = g.supported and g.number is not None
    if not supported or g.number is None or not 1 <= g.number <= len(sources):
        return Line(g.text.strip(), None, "", "", checked=False)
    s = sources[g.number - 1]
    page = g.page_number or s.page_number
    label = s.page_label if page == s.page_number else ""
    return Line(
        g.text.strip(),
        g.number,
        _where(s.title, s.path, s.doc_type, page, label),
        link_for(s.path, page, s.doc_type),
        checked=True,
    )


def _source_line(s: Source) -> Line:
    where = s.where()
    return Line(where, s.number, where, link_for(s.path, s.page_number, s.doc_type))


def _scope(chat: Chat) -> str:
    if chat.collection_id is not None:
        return f"the collection “{chat.collection_name}”"
    return "all documents"


def _count(items: Sequence[Exchange]) -> str:
    return f"{len(items)} question" + ("" if len(items) == 1 else "s")


def _stamp(now: dt.datetime | None) -> str:
    return (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%d %H:%M %Z").strip()


# -- Markdown ------------------------------------------------------------------------------------------------


def _md(text: str) -> str:
    """Text that Markdown shows as written (its marks escaped)."""
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", text)


def _md_link(line: Line) -> str:
    return f" — [{_md(line.where) or 'open'}](<{line.link}>)" if line.link else f" — {_md(line.where)}"


def to_markdown(chat: Chat, messages: Sequence[Message], *, now: dt.datetime | None = None) -> str:
    out = [f"# {_md(chat.title)}", ""]
    exchanges_ = exchanges(messages)
    out += [f"Scope: {_md(_scope(chat))} · {_count(exchanges_)} · exported {_stamp(now)}", ""]
    if chat.scope_note:
        out += [f"*{_md(chat.scope_note)}*", ""]
    for i, ex in enumerate(exchanges_, 1):
        out += ["---", "", f"## {i}. {_md(' '.join(ex.question.split()) or '(no question)')}", ""]
        if ex.label:
            out += [f"**{_md(ex.label)}**", ""]
        if ex.text:
            out += [ex.text.strip(), ""]
        if ex.table:
            out += [*_md_table(ex), ""]
        for heading, lines in ex.blocks:
            out += [f"**{_md(heading)}**", ""]
            for line in lines:
                number = f" \\[{line.number}\\]" if line.number is not None else ""
                if heading == CLOSEST:
                    out.append(f"- \\[{line.number}\\]{_md_link(line)}")
                elif line.checked is None:
                    out += [f"> “{_md(line.text)}”{number}{_md_link(line)}", ">"]
                elif line.checked:
                    out.append(f"- ✓ {_md(line.text)}{number}{_md_link(line)}")
                else:
                    out.append(f"- ✗ {_md(line.text)} *{NOT_FOUND_MARK}*")
            if out[-1] == ">":
                out.pop()
            out.append("")
        if ex.stopped:
            out += ["*Stopped.*", ""]
        if ex.notice:
            out += [f"*{_md(ex.notice)}*", ""]
        if ex.sources:
            out += [f"**{SOURCES_HEADING}**", ""]
            out += [f"- \\[{s.number}\\]{_md_link(s)}" for s in ex.sources]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _md_table(ex: Exchange) -> list[str]:
    """A comparison as a Markdown table: a column per side, its quoted cell with its link."""

    def cell(name: str, line: Line | None) -> str:
        if line is None:
            return f"*{_md(NOTHING.format(name=name))}*"
        return f"“{_md(line.text)}” \\[{line.number}\\]{_md_link(line)}".replace("\n", " ")

    out = [f"**{COMPARED}**", ""]
    out.append("| " + " | ".join(_md(name) for name, _ in ex.table) + " |")
    out.append("|" + "---|" * len(ex.table))
    out.append("| " + " | ".join(cell(name, line) for name, line in ex.table) + " |")
    return out + ([] if not ex.change else ["", f"**{_md(ex.change)}**"])


# -- HTML ---------------------------------------------------------------------------------------------------

_CSS = """
body { font-family: sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em; line-height: 1.45;
       color: #1d1d1f; background: #ffffff; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.6em; border-top: 1px solid #d0d0d5; padding-top: 0.8em; }
.meta, .where, .notice, .label { color: #5f6368; }
.notice { font-style: italic; }
.label { font-weight: bold; margin: 0.8em 0 0.3em 0; }
blockquote { margin: 0.3em 0; padding: 0.3em 0.8em; border-left: 4px solid #4a7bd0; background: #eef3fb; }
ul.checked { list-style: none; padding-left: 0.4em; }
.ok { color: #1b7f3b; font-weight: bold; }
.no { color: #b3261e; font-weight: bold; }
.unsupported { color: #b3261e; }
ul.sources { list-style: none; padding-left: 0.4em; }
a { color: #1a5fb4; }
table.compare { border-collapse: collapse; width: 100%; margin: 0.3em 0; }
table.compare th, table.compare td { border: 1px solid #c8ccd4; padding: 0.4em 0.6em; text-align: left;
       vertical-align: top; background: #eef3fb; }
p.change { font-weight: bold; }
"""
_DARK = """
@media (prefers-color-scheme: dark) {
  body { color: #e6e6e6; background: #1e1f22; }
  blockquote { background: #262c36; border-left-color: #7aa2e3; }
  .meta, .where, .notice, .label { color: #a0a4ab; }
  a { color: #8ab4f8; }
  table.compare th, table.compare td { background: #262c36; border-color: #4a505a; }
  .ok { color: #6fcf8a; } .no, .unsupported { color: #f28b82; }
}
"""


def _a(line: Line, text: str | None = None) -> str:
    shown = escape(text if text is not None else line.where)
    return f'<a href="{escape(line.link)}">{shown}</a>' if line.link else shown


def _text_html(text: str) -> str:
    paragraphs = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    return "".join(f"<p>{escape(p).replace(chr(10), '<br>')}</p>" for p in paragraphs)


def to_html(
    chat: Chat, messages: Sequence[Message], *, now: dt.datetime | None = None, dark: bool = True
) -> str:
    """One HTML file, its style inside it (light or dark as the reader's system is; ``dark`` False: light
    only, for printing), that needs nothing else."""
    exchanges_ = exchanges(messages)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(chat.title)}</title><style>{_CSS}{_DARK if dark else ''}</style></head><body>",
        f"<h1>{escape(chat.title)}</h1>",
        f'<p class="meta">Scope: {escape(_scope(chat))} · {_count(exchanges_)} · exported '
        f"{escape(_stamp(now))}</p>",
    ]
    if chat.scope_note:
        out.append(f'<p class="notice">{escape(chat.scope_note)}</p>')
    for i, ex in enumerate(exchanges_, 1):
        out.append(f"<h2>{i}. {escape(' '.join(ex.question.split()) or '(no question)')}</h2>")
        if ex.label:
            out.append(f'<p class="label">{escape(ex.label)}</p>')
        if ex.text:
            out.append(_text_html(ex.text))
        if ex.table:
            out.append(_html_table(ex))
        for heading, lines in ex.blocks:
            out.append(f'<p class="label">{escape(heading)}</p>')
            if heading == CLOSEST:
                out.append("<ul>" + "".join(f"<li>[{n.number}] {_a(n)}</li>" for n in lines) + "</ul>")
            elif lines and lines[0].checked is None:
                out += [
                    f"<blockquote>“{escape(line.text)}” [{line.number}] "
                    f'<span class="where">— {_a(line)}</span></blockquote>'
                    for line in lines
                ]
            else:
                out.append('<ul class="checked">' + "".join(_checked_html(line) for line in lines) + "</ul>")
        if ex.stopped:
            out.append('<p class="notice">Stopped.</p>')
        if ex.notice:
            out.append(f'<p class="notice">{escape(ex.notice)}</p>')
        if ex.sources:
            out.append(f'<p class="label">{SOURCES_HEADING}</p><ul class="sources">')
            out += [f"<li>[{s.number}] {_a(s)}</li>" for s in ex.sources]
            out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _html_table(ex: Exchange) -> str:
    """A comparison as a table: a column per side, its quoted cell and the link to its page."""
    heads = "".join(f'<th scope="col">{escape(name)}</th>' for name, _ in ex.table)
    cells = "".join(
        f'<td>“{escape(line.text)}” [{line.number}] <span class="where">— {_a(line)}</span></td>'
        if line is not None
        else f'<td class="notice">{escape(NOTHING.format(name=name))}</td>'
        for name, line in ex.table
    )
    change = f'<p class="change">{escape(ex.change)}</p>' if ex.change else ""
    return (
        f'<p class="label">{escape(COMPARED)}</p><table class="compare" aria-label="{escape(COMPARED)}">'
        f"<tr>{heads}</tr><tr>{cells}</tr></table>{change}"
    )


def _checked_html(line: Line) -> str:
    if line.checked:
        return (
            f'<li><span class="ok">✓</span> {escape(line.text)} [{line.number}] '
            f'<span class="where">— {_a(line)}</span></li>'
        )
    return (
        f'<li><span class="no">✗</span> <span class="unsupported">{escape(line.text)} '
        f"<i>{escape(NOT_FOUND_MARK)}</i></span></li>"
    )


def render(fmt: str, chat: Chat, messages: Sequence[Message], *, now: dt.datetime | None = None) -> str:
    """``md`` or ``html``; for ``pdf`` the HTML that Qt prints (light colours only)."""
    if fmt == "md":
        return to_markdown(chat, messages, now=now)
    if fmt in ("html", "pdf"):
        return to_html(chat, messages, now=now, dark=fmt == "html")
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def export_chat(conn: Any, chat_id: int, fmt: str) -> tuple[Chat, str]:
    """Chat ``chat_id`` and its text in ``fmt``.

    Raises:
        KnownError: there is no such chat (it may have been deleted).
    """
    chat = get_chat(conn, chat_id)
    if chat is None:
        raise KnownError(f"There is no chat {chat_id} (it may have been deleted).")
    return chat, render(fmt, chat, load_messages(conn, chat_id))


def file_name(title: str, fmt: str, chat_id: int = 0) -> str:
    """A file name for the export: the chat's title, made safe for any file system."""
    stem = re.sub(r"[^\w .-]+", "", title).strip(" .")[:60] or f"chat-{chat_id}"
    return f"{stem}.{fmt}"
