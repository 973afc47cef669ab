"""The chat transcript as HTML, built from plain data (a ``Turn`` and a few colours): no widgets, no Qt calls.

An answer is "evidence first" (see ``core.answer.engine``). What leads it (``Turn.lead``):

- ``"sources"``: the sentences quoted from the documents are the answer; a model's rewording follows under
  ``REWORDED``, each sentence checked against the sources (only supported ones are kept);
- ``"model"``: the model's checked answer comes first (an unsupported sentence is marked in the warning colour
  as not found in the documents), then the quoted sentences under ``FROM_DOCUMENTS``;
- ``""``: an answer without evidence (plain chat, nothing relevant found, or a message kept before answers had
  parts): its text with its citations as links.

When the documents do not seem to answer (evidence status ``not_found``) a muted line says so and the closest
passages are listed. Whole-document answers (an outline, a summary…) are their text with ``[n]`` links.

An answer from the model alone (grounding off, the person asked for it, or the store down) is headed
``MODEL_ALONE_LABEL`` from its first word. A not-found turn (not strict) ends with the ``ASK_MODEL_ALONE``
button.

Links in the HTML (``ChatPanel`` opens the ``SourceViewer`` for each): ``cite:T:N`` a citation in the answer
text and ``src:T:N`` a row of a sources list (source ``N`` of turn ``T``); ``ev:T:I`` quoted sentence ``I`` of
turn ``T`` (the viewer highlights exactly that sentence); ``gen:T:I`` checked sentence ``I`` (the viewer
highlights the source sentence that supports it); ``fig:T:I`` cell ``I`` of turn ``T``'s computation (an
operand, then the closest cells of a missing one: the viewer outlines the cell and its heading); ``alone:T``
asks turn ``T``'s question of the model alone;
``check:T`` saves turn ``T``'s question as a test question (``SAVE_AS_CHECK``, under every answer from the
documents).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import PurePath
from typing import Any

from localrag.core.answer.citations import page_phrase
from localrag.core.answer.events import MODEL_ALONE, MODEL_ALONE_LABEL
from localrag.core.answer.figures import Computation, Operand
from localrag.core.answer.history import Message
from localrag.core.answer.notices import NOT_ANSWERED_TEXT
from localrag.core.answer.quotes import NEAREST, Evidence, EvidenceSpan, display
from localrag.core.answer.support import CheckedSentence
from localrag.core.text.cells import Cells
from localrag.gui.views.source_ref import SourceRef
from localrag.gui.views.transcript_compare import COMPARED, comparison_html

SOURCES, MODEL = "sources", "model"
# Evidence kinds of answers about whole documents: their text (with [n] marks) is the answer.
OVERVIEW_KINDS = frozenset({"outline", "summary", "compare", "which_documents"})
FROM_DOCUMENTS = "From your documents:"
COMPUTED = "Computed from your documents:"
ASKED_TO_COMPUTE = "To compute from your documents:"
REWORDED = "In other words (the model, checked against your documents):"
REWORDING = "Rewording…"
NOT_ANSWERED = NOT_ANSWERED_TEXT
CLOSEST = "The closest passages:"
NOT_FOUND = "not found in your documents"
NOTHING_CHECKED = "Nothing the model wrote could be found in your documents."
ASK_MODEL_ALONE = "Ask the model without my documents"
SAVE_AS_CHECK = "Save as a test question…"
# Where streamed tokens go in a pending turn: ``ChatPanel`` replaces this character with them.
STREAM_MARK = "\ue000"
TITLE_CHARS = 48
SNIPPET_CHARS = 160
_LINK = "text-decoration:none; font-weight:600"


@dataclass
class Turn:
    """One question and its answer as the transcript shows them.

    ``evidence``, ``lead`` and ``generated`` are the answer's parts (``None``, ``""`` and empty for a plain
    answer or an old message): the quoted sentences, what leads, and every generated sentence as checked.
    """

    question: str
    grounded: bool = True
    strict: bool = False
    answer: str = ""
    sources: list[SourceRef] = field(default_factory=list)
    status: str = ""  # transient: searching, waiting, answering, rewording
    notice: str = ""  # stays with the answer: not grounded because…, nothing relevant found…
    error: str = ""
    message_id: int | None = None
    pending: bool = False
    stopped: bool = False
    evidence: Evidence | None = None
    lead: str = ""
    generated: list[CheckedSentence] = field(default_factory=list)
    basis: str = ""  # what the answer rests on (``Done.basis``): documents, not_found, or model (alone)

    @property
    def model_alone(self) -> bool:
        """Whether the answer is the model's alone: grounding off (or asked for), or the store down."""
        return self.basis == MODEL_ALONE or (not self.grounded and self.evidence is None)

    def valid(self, number: int) -> bool:
        return 1 <= number <= len(self.sources)

    @property
    def streams(self) -> bool:
        """Whether the model's tokens show as they come (not when it only rewords the quoted sources)."""
        return self.evidence is None or self.lead != SOURCES

    def kept(self) -> list[tuple[int, CheckedSentence]]:
        """The generated sentences the answer shows, with their index in ``generated``: the supported ones,
        and when the model leads (not in strict mode) the unsupported ones too, marked. A rewording that only
        repeats a quoted sentence is not shown twice."""
        keep_unsupported = self.lead == MODEL and not self.strict
        quoted = set()
        if self.lead == SOURCES and self.evidence is not None:
            quoted = {_words(s.text) for s in self.evidence.spans}
        return [
            (i, g)
            for i, g in enumerate(self.generated)
            if (g.supported or keep_unsupported) and _words(g.text) not in quoted
        ]


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


# -- references for the viewer -------------------------------------------------------------------------------


def _ref_for(
    turn: Turn,
    number: int | None,
    *,
    page: int,
    start: int,
    end: int,
    text: str,
    fallback: EvidenceSpan | None = None,
) -> SourceRef | None:
    """Source ``number`` of ``turn`` narrowed to the characters ``start``..``end`` of page ``page`` (the whole
    source when ``start`` is -1)."""
    base = turn.sources[number - 1] if number is not None and turn.valid(number) else None
    if base is None:
        if fallback is None:
            return None
        suffix = PurePath(fallback.path).suffix.lower().lstrip(".")
        base = SourceRef(
            doc_id=fallback.doc_id,
            title=fallback.title,
            path=fallback.path,
            doc_type=suffix,
            page_number=fallback.page_number,
            page_label=fallback.page_label,
            heading_path="",
            char_start=0,
            char_end=0,
            text=fallback.text,
            number=fallback.number,
        )
        if start < 0:
            return base
    if start < 0 or end <= start:
        return dataclasses.replace(base)
    label = base.page_label if not page or page == base.page_number else getattr(fallback, "page_label", "")
    return dataclasses.replace(
        base,
        page_number=page or base.page_number,
        page_label=label,
        char_start=start,
        char_end=end,
        text=text,
        number=number,
    )


def span_ref(turn: Turn, index: int) -> SourceRef | None:
    """Quoted sentence ``index`` of ``turn`` as a ``SourceRef``: its source, with exactly its characters."""
    # A not-found answer's one link of this kind is to its nearest sentence.
    spans = (turn.evidence.spans or turn.evidence.nearest) if turn.evidence is not None else []
    if not 0 <= index < len(spans):
        return None
    s = spans[index]
    ref = _ref_for(
        turn, s.number, page=s.page_number, start=s.char_start, end=s.char_end, text=s.text, fallback=s
    )
    if ref is not None and s.char_start >= 0:  # the cells asked for, outlined on the page
        ref.marks = list(dict.fromkeys(m for row in s.rows for m in row.marks))
    return ref


def figure_cells(turn: Turn) -> list[Operand]:
    """The cells a turn's computation shows, in order: its operands found, then the closest cells listed for
    one missing or ambiguous (``fig:T:I`` links index this list)."""
    worked = Computation.from_dict(turn.evidence.figures if turn.evidence is not None else None)
    return _shown_cells(worked) if worked is not None else []


def _shown_cells(worked: Computation) -> list[Operand]:
    found = [o for o in worked.operands if not o.problem]
    return found + [c for o in worked.operands for c in worked.candidates.get(o.role, [])]


def figure_ref(turn: Turn, index: int) -> SourceRef | None:
    """Cell ``index`` of a turn's computation as a ``SourceRef``: its row highlighted, the cell and its
    column heading outlined."""
    cells = figure_cells(turn)
    if not 0 <= index < len(cells):
        return None
    o = cells[index]
    fallback = EvidenceSpan.of_operand(o, o.label)
    ref = _ref_for(
        turn, o.number, page=o.page_number, start=o.row[0], end=o.row[1], text=o.label, fallback=fallback
    )
    if ref is not None and o.row[0] >= 0:
        ref.marks = [tuple(m) for m in o.marks]  # type: ignore[misc]
    return ref


def checked_ref(turn: Turn, index: int) -> SourceRef | None:
    """The source span that checked sentence ``index`` of ``turn`` matched, as a ``SourceRef``."""
    if not 0 <= index < len(turn.generated):
        return None
    g = turn.generated[index]
    return _ref_for(
        turn, g.number, page=g.page_number, start=g.char_start, end=g.char_end, text=g.source_text
    )


# -- small pieces --------------------------------------------------------------------------------------------


def link_citations(answer: str, turn_index: int, n_sources: int) -> str:
    """The answer as HTML paragraphs whose citations (``[1]``, ``[1, 3]``, ``[2-4]``) link to their sources.

    Only numbers that name one of the ``n_sources`` sources become links (checked by
    ``core.answer.citations``); a lone ``[n]`` is one link, brackets included, for a bigger target.
    """
    from localrag.core.answer.citations import check_citations, segments

    parts = []
    for text, number in segments(answer, check_citations(answer, n_sources)):
        if number is None:
            parts.append(escape(text))
        else:
            parts.append(f'<a href="cite:{turn_index}:{number}" style="{_LINK}">{escape(text)}</a>')
    paragraphs = re.split(r"\n\s*\n", "".join(parts).strip())
    return "".join(f"<p>{p.replace(chr(10), '<br>')}</p>" for p in paragraphs if p)


def text_html(text: str) -> str:
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "".join(f"<p>{escape(p).replace(chr(10), '<br>')}</p>" for p in paragraphs if p)


def _inline(text: str) -> str:
    """Escaped text with its `code` in a fixed-width font."""
    pieces = re.split(r"`([^`\n]+)`", text)
    return "".join(escape(p) if i % 2 == 0 else f"<code>{escape(p)}</code>" for i, p in enumerate(pieces))


def _title(ref: SourceRef | None, span: EvidenceSpan | None = None) -> str:
    name = (ref.title or PurePath(ref.path).name) if ref is not None else ""
    if not name and span is not None:
        name = span.title or PurePath(span.path).name
    return _short(name or "Untitled")


def _short(name: str) -> str:
    return name if len(name) <= TITLE_CHARS else name[: TITLE_CHARS - 1].rstrip() + "…"


def _page_html(phrase: str) -> str:
    return escape(phrase).replace("p. ", "p.&nbsp;", 1)


def _has_pages(ref: SourceRef | None, page_number: int) -> bool:
    return page_number > 1 or (ref is not None and ref.doc_type == "pdf")


def source_line(number: int, ref: SourceRef, turn_index: int, muted: str) -> str:
    """One row of a sources list; a source the answer cites is in bold."""
    title = escape(ref.title or ref.path.rsplit("/", 1)[-1] or "Untitled")
    bits = []
    if ref.doc_type == "pdf" or ref.page_number > 1:
        bits.append(_page_html(ref.page_phrase()))
    if ref.heading_path and ref.heading_path != ref.title:
        bits.append(escape(ref.heading_path.replace(" > ", " › ")))
    if ref.score is not None:
        bits.append(f"score {ref.score:.2f}")
    if ref.quoted:
        bits.append("quoted in the answer, not cited")
    detail = f" <span style='color:{muted}'>· {' · '.join(bits)}</span>" if bits else ""
    href = f"src:{turn_index}:{number}"
    weight = "font-weight:600; " if ref.cited else ""
    return (
        f"<tr><td style='padding:1px 6px 1px 0'><a href='{href}' style='{weight}'>[{number}]</a></td>"
        f"<td style='padding:1px 0'><a href='{href}' style='{weight}'>{title}</a>{detail}</td></tr>"
    )


def _label(text: str, c: dict[str, str]) -> str:
    return f"<p style='margin-top:8px; margin-bottom:3px; color:{c['muted']}'>{escape(text)}</p>"


# -- the parts of an answer ----------------------------------------------------------------------------------


def figures_html(turn: Turn, index: int, c: dict[str, str]) -> str:
    """The computation the question asked for: the result, the formula with the values and each operand
    with its ``[n]`` (a link that outlines the cell on its page); or, not computed, which operand is missing
    or ambiguous and the closest cells."""
    worked = Computation.from_dict(turn.evidence.figures if turn.evidence is not None else None)
    if worked is None:
        return ""
    cells = _shown_cells(worked)

    def cell_html(o: Operand) -> str:
        i = next(k for k, x in enumerate(cells) if x is o)
        ref = turn.sources[o.number - 1] if turn.valid(o.number) else None
        where = [escape(_title(ref, None) if ref is not None else (o.title or PurePath(o.path).name))]
        if _has_pages(ref, o.page_number):
            where.append(_page_html(page_phrase(o.page_number, o.page_label)))
        return (
            f"{escape(o.label)}, {escape(o.heading)}: <b>{escape(o.value)}</b>&nbsp;"
            f"<a href='fig:{index}:{i}' style='{_LINK}'>[{o.number}]</a>"
            f"<span style='color:{c['muted']}'> · {' · '.join(where)}</span>"
        )

    if worked.computed:
        head = f"<b>{escape(worked.subject)} = {escape(worked.result_text)}</b>"
        lines = [f"<span style='color:{c['muted']}'>{escape(worked.formula + worked.note)}</span>"]
        lines += ["• " + cell_html(o) for o in worked.operands]
    else:
        head = (
            f"<span style='color:{c['warning']}'><b>{escape(worked.subject)}: not computed.</b> "
            f"{escape(worked.message)}</span>"
        )
        lines = []
        for o in worked.operands:
            closest = worked.candidates.get(o.role) or []
            if closest:
                lines.append(f"Closest to {escape(o.named())}:")
                lines += ["• " + cell_html(x) for x in closest]
    body = "<br>".join([head, *lines])
    return (
        _label(COMPUTED if worked.computed else ASKED_TO_COMPUTE, c)
        + "<table width='100%' cellspacing='0' cellpadding='0' style='margin-bottom:4px'>"
        + f"<tr><td width='4' style='background-color:{c['quote_bar']}'></td>"
        + f"<td style='background-color:{c['quote_bg']}; padding:5px 10px 5px 10px'>{body}</td></tr></table>"
    )


def evidence_html(turn: Turn, index: int, c: dict[str, str]) -> str:
    """The quoted sentences, each with its ``[n]`` (a link to exactly that sentence) and page, as a quotation;
    or, when the documents do not seem to answer, a muted line and the closest passages."""
    ev = turn.evidence
    if ev is None:
        return ""
    if not ev.answered:
        return not_found_html(turn, index, c)
    if not ev.spans:  # a computation alone answers
        return ""

    def said(i: int, s: EvidenceSpan) -> str:  # a comparison's cell
        ref = turn.sources[s.number - 1] if turn.valid(s.number) else None
        where = ""
        if _has_pages(ref, s.page_number):
            page = _page_html(page_phrase(s.page_number, s.page_label))
            where = f"<span style='color:{c['muted']}'> · {page}</span>"
        return f"“{_quoted(s)}”&nbsp;<a href='ev:{index}:{i}' style='{_LINK}'>[{s.number}]</a>{where}"

    table = comparison_html(ev, said, _label(COMPARED, c), c)
    if table:
        return table
    return _label(FROM_DOCUMENTS, c) + quotes_html(turn, index, ev.spans, c)


def quotes_html(turn: Turn, index: int, spans: list[EvidenceSpan], c: dict[str, str]) -> str:
    """Quoted sentences as a quotation, each with its ``[n]`` (``ev:`` links, in order) and where it is."""
    rows = []
    for i, span in enumerate(spans):
        ref = turn.sources[span.number - 1] if turn.valid(span.number) else None
        where = [escape(_title(ref, span))]
        section = _short(span.section.rsplit("›", 1)[-1].strip())  # the heading the quote is under
        if section and section != where[0]:
            where.append(escape(section))
        if _has_pages(ref, span.page_number):
            where.append(_page_html(page_phrase(span.page_number, span.page_label)))
        rows.append(
            f"<tr><td width='4' style='background-color:{c['quote_bar']}'></td>"
            f"<td style='background-color:{c['quote_bg']}; padding:5px 10px 5px 10px'>"
            f"“{_quoted(span)}”&nbsp;"
            f"<a href='ev:{index}:{i}' style='{_LINK}'>[{span.number}]</a>"
            f"<span style='color:{c['muted']}'> · {' · '.join(where)}</span></td></tr>"
        )
    return (
        "<table width='100%' cellspacing='0' cellpadding='0' style='margin-bottom:4px'>"
        + "".join(rows)
        + "</table>"
    )


def _quoted(span: EvidenceSpan) -> str:
    """A quoted sentence; rows of figures as their labels and each value with its column, the columns the
    question names in bold."""
    rows = span.rows
    if not rows:
        return _inline(display(span.text))
    return "; ".join(_row_html(row) for row in rows)


def _row_html(row: Cells) -> str:
    columns = [
        f"<b>{escape(h)}: {escape(v)}</b>" if i in row.asked else f"{escape(h)}: {escape(v)}"
        for i, (h, v) in enumerate(row.columns)
    ]
    return f"{escape(row.label)} — " + " · ".join(columns)


def closest_numbers(turn: Turn) -> list[int]:
    """The sources a not-found answer lists as the closest passages."""
    ev = turn.evidence
    numbers = [n for n in (ev.closest if ev is not None else []) if turn.valid(n)]
    return numbers or list(range(1, min(len(turn.sources), 3) + 1))


def not_found_html(turn: Turn, index: int, c: dict[str, str]) -> str:
    """ "Your documents do not seem to answer this", and the closest passages (links to their sources)."""
    numbers = closest_numbers(turn)
    nearest = [s for s in (turn.evidence.nearest if turn.evidence else [])[:1] if turn.valid(s.number)]
    out = [
        f"<p style='margin-top:6px; color:{c['muted']}'><i>{escape(NOT_ANSWERED)}</i>"
        + (f" {escape(NEAREST)}" if nearest else f" {escape(CLOSEST)}" if numbers else "")
        + "</p>"
    ]
    if nearest:
        out.append(quotes_html(turn, index, nearest, c))
        if numbers:
            out.append(f"<p style='color:{c['muted']}'>{escape(CLOSEST)}</p>")
    if numbers:
        out.append("<table cellspacing='0' cellpadding='0'>")
        for n in numbers:
            ref = turn.sources[n - 1]
            where = [escape(_title(ref))]
            if _has_pages(ref, ref.page_number):
                where.append(_page_html(ref.page_phrase()))
            snippet = " ".join(re.sub(r"(?m)^\s*#+\s+", "", ref.text).split())  # without Markdown marks
            if len(snippet) > SNIPPET_CHARS:
                snippet = snippet[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + "…"
            out.append(
                f"<tr><td style='padding:2px 6px 2px 0' valign='top'><a href='src:{index}:{n}'>[{n}]</a></td>"
                f"<td style='padding:2px 0'><a href='src:{index}:{n}'>{' · '.join(where)}</a>"
                + (f"<br><span style='color:{c['muted']}'>{escape(snippet)}</span>" if snippet else "")
                + "</td></tr>"
            )
        out.append("</table>")
    if not turn.strict and not turn.pending:
        out.append(ask_alone_html(index, c))
    return "".join(out)


def ask_alone_html(index: int, c: dict[str, str]) -> str:
    """The button that asks turn ``index``'s question of the model alone (a link drawn as a button)."""
    border = c.get("button_border", c["muted"])
    background = c.get("button_bg", c.get("you_bg", "transparent"))
    return (
        f"<table cellspacing='0' cellpadding='6' border='1' style='margin-top:8px; border-style:solid; "
        f"border-color:{border}; background-color:{background}'><tr><td>"
        f"<a href='alone:{index}' style='{_LINK}'>{escape(ASK_MODEL_ALONE)}</a></td></tr></table>"
    )


def checked_html(turn: Turn, index: int, c: dict[str, str]) -> str:
    """The generated sentences the answer keeps: a supported one with the ``[n]`` of its source (a link to the
    sentence it matched), an unsupported one in the warning colour, marked as not found in the documents."""
    pieces = []
    for i, g in turn.kept():
        text = _inline(g.text.rstrip())
        if g.supported and g.number is not None:
            pieces.append(f"{text}&nbsp;<a href='gen:{index}:{i}' style='{_LINK}'>[{g.number}]</a>")
        else:
            pieces.append(f"<span style='color:{c['warning']}'>{text} <i>({NOT_FOUND})</i></span>")
    return f"<p>{' '.join(pieces)}</p>" if pieces else ""


def answer_html(turn: Turn, index: int, c: dict[str, str]) -> str:
    """The answer of ``turn``: its status while pending, and the parts its lead puts first. A pending turn
    whose tokens stream gets ``STREAM_MARK`` where they go (once there are some)."""
    ev = turn.evidence
    status = f"<p style='color:{c['muted']}'><i>{escape(turn.status)}</i></p>" if turn.status else ""
    stream = f"<p>{STREAM_MARK}</p>" if turn.pending and turn.streams and turn.answer else ""
    if ev is None:
        body = stream or (link_citations(turn.answer, index, len(turn.sources)) if turn.answer else "")
        if turn.model_alone:  # said from the first word, not in a footnote
            label = f"<p style='margin-top:4px; margin-bottom:3px; color:{c['warning']}'><b>"
            return label + f"{escape(MODEL_ALONE_LABEL)}</b></p>" + status + body
        return status + body
    if ev.kind in OVERVIEW_KINDS:  # the answer's text is the outline or summary, with its [n] marks
        return link_citations(turn.answer, index, len(turn.sources)) + status
    if turn.lead == SOURCES:
        reworded = checked_html(turn, index, c)
        if reworded:
            reworded = _label(REWORDED, c) + reworded
        return figures_html(turn, index, c) + evidence_html(turn, index, c) + reworded + status
    # The model leads: its checked answer (streamed while pending), then what the documents say.
    if turn.pending:
        return status + stream + figures_html(turn, index, c) + evidence_html(turn, index, c)
    body = checked_html(turn, index, c)
    if not body and turn.generated:
        body = f"<p style='color:{c['muted']}'><i>{escape(NOTHING_CHECKED)}</i></p>"
    elif not body and not ev.answered and turn.answer:  # the model wrote nothing: the engine says so
        body = text_html(turn.answer)
    return body + figures_html(turn, index, c) + evidence_html(turn, index, c)


def sources_html(turn: Turn, index: int, c: dict[str, str]) -> str:
    cited = sum(1 for s in turn.sources if s.cited)
    quoted = sum(1 for s in turn.sources if s.quoted)
    note = f" · {cited} cited" if cited else (" · none cited in the answer" if turn.answer else "")
    if quoted:
        note += f" · {quoted} quoted"
    rows = "".join(source_line(i + 1, ref, index, c["muted"]) for i, ref in enumerate(turn.sources))
    return (
        f"<p style='margin-top:8px; margin-bottom:2px; color:{c['muted']}'><b>Sources</b>{note}</p>"
        f"<table cellspacing='0' cellpadding='0'>{rows}</table>"
    )


def turn_html(index: int, turn: Turn, c: dict[str, str]) -> str:
    """One turn: the question, the answer (see ``answer_html``), then what went wrong, the notice and the
    sources (once the answer is complete).

    ``c`` names the colours: ``muted``, ``warning``, ``error``, ``you_bg`` (the question's background),
    ``quote_bg`` and ``quote_bar`` (the quoted sentences).
    """
    mode = "plain chat" if not turn.grounded else ("documents · strict" if turn.strict else "documents")
    parts = [
        (
            f"<table width='100%' cellspacing='0' cellpadding='8' style='margin-top:12px; "
            f"background-color:{c['you_bg']}'><tr><td>"
            f"<b>You</b> <span style='color:{c['muted']}'>· {mode}</span>"
            f"{text_html(turn.question)}</td></tr></table>"
        ),
        "<p style='margin-top:10px; margin-bottom:2px'><b>Local RAG</b></p>",
        answer_html(turn, index, c),
    ]
    if turn.pending:
        return "".join(parts)
    if turn.error:
        parts.append(f"<p style='color:{c['error']}'>{escape(turn.error)}</p>")
    if turn.stopped:
        parts.append(f"<p style='color:{c['muted']}'><i>Stopped.</i></p>")
    if turn.notice:
        parts.append(f"<p style='color:{c['warning']}'>{escape(turn.notice)}</p>")
    ev = turn.evidence
    listed = ev is not None and not ev.answered and len(closest_numbers(turn)) == len(turn.sources)
    if turn.sources and not listed:  # a not-found answer's closest passages are its whole sources list
        parts.append(sources_html(turn, index, c))
    if turn.sources and not turn.model_alone:
        parts.append(
            f"<p style='margin-top:4px'><a href='check:{index}' style='color:{c['muted']}; "
            f"text-decoration:none'>{escape(SAVE_AS_CHECK)}</a></p>"
        )
    return "".join(parts)


# -- history -------------------------------------------------------------------------------------------------


def restore_parts(turn: Turn, parts: dict[str, Any] | None) -> None:
    """Give ``turn`` the answer's parts stored with its message (``Message.parts``; none for an old one)."""
    if not parts:
        return
    turn.evidence = Evidence.from_dict(parts.get("evidence"))
    turn.lead = str(parts.get("lead") or "") if turn.evidence is not None else ""
    generated = parts.get("generated") or []
    turn.generated = [CheckedSentence.from_dict(g) for g in generated if isinstance(g, dict)]


def turns_from_messages(messages: list[Message]) -> list[Turn]:
    """Rebuild the transcript from stored messages (user/assistant pairs, with the answers' sources and
    parts)."""
    turns: list[Turn] = []
    for m in messages:
        if m.role == "user":
            turns.append(Turn(m.content, grounded=m.grounded, strict=m.strict))
        elif m.role == "assistant":
            if not turns or turns[-1].answer or turns[-1].message_id is not None:
                turns.append(Turn("", grounded=m.grounded))
            turn = turns[-1]
            turn.answer = m.content
            turn.message_id = m.id
            turn.grounded = m.grounded
            turn.strict = m.strict
            turn.sources = [SourceRef.from_source(s, i + 1) for i, s in enumerate(m.sources)]
            turn.notice = m.notice
            turn.stopped = m.cancelled
            turn.basis = str(m.timings.get("basis") or "")
            restore_parts(turn, m.parts)
    return turns
