"""Whole sentences: do the sentences a person reads on a PDF page come out of extraction whole?

A sentence dataset is a folder with ``pdfs/`` and ``sentences.jsonl``; each line has ``file`` (a PDF in
``pdfs/``), ``producer`` (what made the PDF: ``latex``, ``texinfo``, ``word``…), ``page`` (1-based),
``sentence``, written as a person reads it on the rendered page, and ``split``: ``tune`` for the sentences
looked at while the reading rules were written, ``test`` for those written after, from pages nobody had looked
at. Each page is read with the app's PDF loader (no OCR of its own: a scanned PDF is read through its text
layer) and split into sentences with the splitter the answers quote from; a sentence that runs over a page
break is joined to the page before or after as the answers join it. A gold sentence comes out **whole** when
one candidate equals it after white space is normalised; a list item's candidate may keep the number or
bullet that opens it ("3. It is impossible to …" for "It is impossible to …": the item as the page shows it).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localrag.core.ingest import loaders
from localrag.core.text import spans as sp


@dataclass
class GoldSentence:
    file: str
    producer: str
    page: int
    sentence: str
    split: str = "tune"


def load_gold(folder: Path) -> list[GoldSentence]:
    path = folder / "sentences.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no sentences.jsonl in {folder}")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out.append(
                GoldSentence(d["file"], d["producer"], int(d["page"]), d["sentence"], d.get("split", "tune"))
            )
    return out


def page_texts(pdf: Path, numbers: set[int]) -> dict[int, str]:
    """The loader's text of the pages ``numbers`` of ``pdf`` (and of the pages either side of each)."""
    wanted = {n + d for n in numbers for d in (-1, 0, 1)}
    texts: dict[int, str] = {}
    for page in loaders.iter_pages(pdf, ocr=False):
        if page.number in wanted:
            texts[page.number] = page.text
    return texts


def candidates(texts: dict[int, str], number: int) -> set[str]:
    """The sentences of page ``number`` as the answers quote them, white space normalised: the page's spans,
    and its first and last joined to the sentence they continue on the page before or finish on the page
    after."""
    page = texts.get(number, "")
    mine = sp.split_spans(page)
    out = {sp.flat(s.text) for s in mine}
    out |= {sp.flat(s.text[m.end() - 1 :]) for s in mine if (m := sp.LIST_ITEM.match(s.text))}
    if not mine:
        return out
    for first, second in ((texts.get(number - 1, ""), page), (page, texts.get(number + 1, ""))):
        end = sp.open_end(sp.split_spans(sp.body(first)))
        second_spans = sp.split_spans(second)
        if end is not None and second_spans:
            out.add(sp.flat(sp.join_across(end.text, second_spans[0].text)))
    return out


def evaluate(folder: Path, *, say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The share of gold sentences that come out whole, per producer and in all, and the ones that did not."""
    gold = load_gold(folder)
    by_file: dict[str, set[int]] = defaultdict(set)
    for g in gold:
        by_file[g.file].add(g.page)
    texts: dict[str, dict[int, str]] = {}
    for name, numbers in sorted(by_file.items()):
        pdf = folder / "pdfs" / name
        if not pdf.exists():
            raise FileNotFoundError(f"{pdf} is missing (run {folder / 'fetch.sh'})")
        say(f"reading {name}")
        texts[name] = page_texts(pdf, numbers)
    total: Counter[tuple[str, str]] = Counter()
    whole: Counter[tuple[str, str]] = Counter()
    misses = []
    cache: dict[tuple[str, int], set[str]] = {}
    for g in gold:
        key = (g.file, g.page)
        if key not in cache:
            cache[key] = candidates(texts[g.file], g.page)
        total[g.split, g.producer] += 1
        if sp.flat(g.sentence) in cache[key]:
            whole[g.split, g.producer] += 1
        else:
            misses.append({"file": g.file, "page": g.page, "sentence": g.sentence, "split": g.split})
    splits: dict[str, Any] = {}
    for split in sorted({s for s, _ in total}, key=lambda s: (s != "tune", s)):
        keys = sorted(k for k in total if k[0] == split)
        n, w = sum(total[k] for k in keys), sum(whole[k] for k in keys)
        splits[split] = {
            "sentences": n,
            "whole": w,
            "share": round(w / n, 3),
            "producers": {
                p: {
                    "sentences": total[split, p],
                    "whole": whole[split, p],
                    "share": _share(whole, total, (split, p)),
                }
                for _, p in keys
            },
        }
    n, w = sum(total.values()), sum(whole.values())
    return {
        "dataset": str(folder),
        "sentences": n,
        "files": len(by_file),
        "whole": w,
        "share": round(w / n, 3) if n else 0.0,
        "splits": splits,
        "misses": misses,
    }


def _share(whole: Counter[tuple[str, str]], total: Counter[tuple[str, str]], key: tuple[str, str]) -> float:
    return round(whole[key] / total[key], 3)
