"""Every generated sentence checked against the sources before it is shown as part of an answer.

A sentence is *supported* when one source sentence (or two adjacent ones) carries its content words and means
the same, and every number and identifier it writes (``R_LIBS_USER``, ``1.5e-8``, ``$1,577``) appears in the
sources. It is then shown with the number of the source that supports it — whatever number the model wrote, if
any. Otherwise it is *unsupported*: marked as not found in the documents, or left out (strict mode, or when
the sources lead and the model only rewords them).

Measured on the answer benchmark (docs/benchmarks.md, "Answers"): ``coverage`` is the share of the sentence's
content words found in the best source window, ``similarity`` the embedding model's cosine of the two; the
``support`` score is their mean.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from localrag.core.answer.citations import _BRACKET, is_prose_citation
from localrag.core.text import spans as sp

MIN_COVERAGE = 0.5
MIN_SUPPORT = 0.6
# A generated sentence with fewer content words than this is joined to the next one before it is checked
# ("Yes." says nothing on its own).
MIN_TERMS = 3
# Source windows compared with the embedding model (the best by coverage).
WINDOWS_EMBEDDED = 3
NOT_FOUND_MARK = "(not found in your documents)"


@dataclass
class CheckedSentence:
    """One sentence of a generated answer and the verdict on it.

    Attributes:
        text: the sentence as written, without the model's own citation marks.
        supported: whether a source supports it (see the module docstring).
        number: the source ``[n]`` that supports it best (``None`` when no source shares anything with it).
        coverage, similarity, support: the measures behind the verdict.
        missing: numbers and identifiers it writes that no source has.
        source_text: the source sentence(s) it matched; ``page_number``/``char_start``/``char_end`` locate
            them.
    """

    text: str
    supported: bool
    number: int | None = None
    coverage: float = 0.0
    similarity: float = 0.0
    support: float = 0.0
    missing: list[str] = field(default_factory=list)
    source_text: str = ""
    page_number: int = 0
    char_start: int = -1
    char_end: int = -1

    def shown(self, *, mark_unsupported: bool = True) -> str:
        """The sentence as the answer shows it: with its ``[n]``, or marked as not found."""
        if self.supported and self.number is not None:
            return f"{self.text.rstrip()} [{self.number}]"
        return f"{self.text.rstrip()} {NOT_FOUND_MARK}" if mark_unsupported else self.text.rstrip()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("coverage", "similarity", "support"):
            d[k] = round(float(d[k]), 4)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckedSentence:
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        known.setdefault("text", "")
        known.setdefault("supported", False)
        return cls(**known)


@dataclass
class _Window:
    number: int
    text: str
    terms: set[str]
    page_number: int
    char_start: int
    char_end: int


class SupportChecker:
    """Checks sentences against numbered ``sources`` (``sources[i - 1]`` is ``[i]``).

    Args:
        embed: the embedding model (texts → unit vectors), or ``None`` to judge by words alone.
    """

    def __init__(self, sources: Sequence[Any], embed: Callable[[list[str]], np.ndarray] | None) -> None:
        self.embed = embed
        self.windows: list[_Window] = []
        texts = []
        for number, src in enumerate(sources, 1):
            text = str(getattr(src, "text", "") or "")
            texts.append(text)
            base = int(getattr(src, "char_start", 0) or 0)
            exact = int(getattr(src, "char_end", 0) or 0) - base >= len(text)
            page = int(getattr(src, "page_number", 1) or 1)
            spans = sp.split_spans(text)
            for i, s in enumerate(spans):
                for j in (i, i + 1):  # a sentence alone, and with the next one
                    if j >= len(spans):
                        break
                    body = text[s.start : spans[j].end]
                    self.windows.append(
                        _Window(
                            number,
                            body,
                            set(sp.content_terms(body)),
                            page,
                            base + s.start if exact else -1,
                            base + spans[j].end if exact else -1,
                        )
                    )
        everything = "\n".join(texts)
        self._numbers = set(sp.numbers(everything)) | {value for _, value in sp.number_words(everything)}
        self._text = sp.flat(everything).lower()
        self._words = {w.lower() for w in sp.words(everything)}

    def check(self, sentence: str) -> CheckedSentence:
        text = strip_marks(sentence).strip()
        terms = set(sp.content_terms(text))
        missing = self._missing(text)
        if not terms or not self.windows:
            return CheckedSentence(text, False, missing=missing)
        ranked = sorted(self.windows, key=lambda w: len(terms & w.terms) / len(terms), reverse=True)
        best = ranked[:WINDOWS_EMBEDDED]
        coverages = [len(terms & w.terms) / len(terms) for w in best]
        similarities = [0.0] * len(best)
        if self.embed is not None:
            vectors = self.embed([sp.flat(text)] + [sp.flat(w.text) for w in best])
            similarities = [float(v) for v in vectors[1:] @ vectors[0]]
        scores = [
            (c + s) / 2 if self.embed is not None else c for c, s in zip(coverages, similarities, strict=True)
        ]
        i = int(np.argmax(scores))
        window, coverage, similarity, support = best[i], coverages[i], similarities[i], scores[i]
        supported = not missing and coverage >= MIN_COVERAGE and support >= MIN_SUPPORT
        return CheckedSentence(
            text=text,
            supported=supported,
            number=window.number if coverage > 0 else None,
            coverage=coverage,
            similarity=similarity,
            support=support,
            missing=missing,
            source_text=window.text,
            page_number=window.page_number,
            char_start=window.char_start,
            char_end=window.char_end,
        )

    def _missing(self, text: str) -> list[str]:
        """The numbers (in digits or words) and identifiers of ``text`` that no source writes."""
        out = [n for n in sp.numbers(text) if n not in self._numbers]
        # A number in words counts too ("three" where the sources say "two"); "one" and "once" are mostly not
        # numbers ("one of the options") and are left to the words.
        out += [
            word
            for word, value in sp.number_words(text)
            if value not in self._numbers and word.lower() not in ("one", "once")
        ]
        for ident in sp.identifiers(text):
            low = ident.lower()
            if low not in self._text and low.strip("()") not in self._words:
                out.append(ident)
        return list(dict.fromkeys(out))


def strip_marks(text: str) -> str:
    """``text`` without the citations a model wrote (they are replaced by the checked ones)."""
    out, pos = [], 0
    for m in _BRACKET.finditer(text):
        if is_prose_citation(text, m.start(), m.end()):
            out.append(text[pos : m.start()].rstrip(" "))
            pos = m.end()
    out.append(text[pos:])
    return re.sub(r"\s+([.,;:!?])", r"\1", "".join(out))


class SentenceStream:
    """Cuts a streamed answer into sentences as they complete (``feed``), and the rest at the end (``flush``).

    A sentence with fewer than ``MIN_TERMS`` content words waits for the next one and is checked with it.
    """

    def __init__(self) -> None:
        self.text = ""
        self._done = 0  # characters of ``text`` already handed out

    def feed(self, piece: str) -> Iterator[str]:
        self.text += piece
        yield from self._complete(final=False)

    def flush(self) -> Iterator[str]:
        yield from self._complete(final=True)

    @property
    def pending(self) -> str:
        """What has been written since the last sentence handed out."""
        return self.text[self._done :]

    def _complete(self, *, final: bool) -> Iterator[str]:
        while True:
            rest = self.text[self._done :]
            spans = sp.split_spans(rest)
            if not final:
                spans = spans[:-1]  # the last one may still grow
            for i, s in enumerate(spans):
                piece = rest[: s.end]  # a short sentence held back goes out with the next one
                if len(set(sp.content_terms(piece))) >= MIN_TERMS or (final and i == len(spans) - 1):
                    self._done += s.end
                    yield piece.strip()
                    break
            else:
                return
