"""Checks the questions against the documents in docs/: fields and kinds, unique ids, the page range, and that
each evidence text is on its page (compared on letters and digits only, so line breaks, hyphenation at line
ends, ligatures and quote styles do not matter). Needs pdftotext (poppler-utils) and python-docx.
    python check_questions.py            # prints problems; exits 1 if any
    python check_questions.py FOLDER     # another folder of this layout (docs/, questions/, split.json)
"""

from __future__ import annotations

import functools
import html.parser
import json
import re
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = {"factual", "setting", "procedural", "list", "numeric", "yesno", "multi", "compare", "document", "none"}
FIELDS = {"id", "file", "page", "question", "answer", "evidence", "kind"}


def squash(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"[^0-9a-z]", "", text)


def on_page(evidence: str, text: str) -> bool:
    """Whether ``evidence`` is in ``text`` on letters and digits; failing that, with the letter pairs that
    ligatures stand for (ff, fi, fl, ffi, ffl) left out of both, for a PDF whose fonts put no text behind
    their ligature glyphs (pdftotext then gives "dierent" for "different")."""
    e, t = squash(evidence), squash(text)
    if e in t:
        return True
    unlig = functools.partial(re.sub, r"ff[il]|f[fil]", "")
    return unlig(e) in unlig(t)


@functools.lru_cache(maxsize=None)
def pdf_pages(path: Path) -> list[str]:
    out = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return out.split("\f")[:-1] if out.endswith("\f") else out.split("\f")


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        if tag in ("script", "style"):
            self.skip += 1

    def handle_endtag(self, tag):  # noqa: ANN001
        if tag in ("script", "style"):
            self.skip -= 1

    def handle_data(self, data):  # noqa: ANN001
        if not self.skip:
            self.parts.append(data)


@functools.lru_cache(maxsize=None)
def one_page(path: Path) -> str:
    if path.suffix == ".html":
        parser = _Text()
        parser.feed(path.read_text(encoding="utf-8"))
        return " ".join(parser.parts)
    if path.suffix == ".docx":
        import docx

        document = docx.Document(str(path))
        parts = []
        for block in document.iter_inner_content():
            if hasattr(block, "rows"):
                parts += [" ".join(c.text for c in row.cells) for row in block.rows]
            else:
                parts.append(block.text)
        return "\n".join(parts)
    return path.read_text(encoding="utf-8")


def page_text(file: str, page: int, folder: Path = HERE) -> str | None:
    path = folder / "docs" / file
    if path.suffix == ".pdf":
        pages = pdf_pages(path)
        return pages[page - 1] if 1 <= page <= len(pages) else None
    return one_page(path) if page == 1 else None


def main(argv: list[str]) -> int:
    folder = Path(argv[1]).resolve() if len(argv) > 1 else HERE
    problems: list[str] = []
    split = json.loads((folder / "split.json").read_text()) if (folder / "split.json").exists() else None
    docs = {p.name for p in (folder / "docs").iterdir()}
    ids: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for qfile in sorted((folder / "questions").glob("*.jsonl")):
        for n, line in enumerate(qfile.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{qfile.name}:{n}"
            try:
                q = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{where}: bad JSON ({exc})")
                continue
            missing = FIELDS - set(q)
            if missing:
                problems.append(f"{where}: missing {sorted(missing)}")
                continue
            where = f"{where} {q['id']}"
            ids[q["id"]] += 1
            kinds[q["kind"]] += 1
            if q["kind"] not in KINDS:
                problems.append(f"{where}: kind {q['kind']!r}")
            if q["file"] not in docs:
                problems.append(f"{where}: no docs/{q['file']}")
                continue
            if q["kind"] == "none":
                if q["answer"] or q["page"] != 0:
                    problems.append(f"{where}: a none question has answer '' and page 0")
                continue
            files = q.get("files") or [q["file"]]
            pages = q.get("pages") or [q["page"]]
            if q["kind"] == "compare" and (len(files) < 2 or len(files) != len(pages)):
                problems.append(f"{where}: compare needs files and pages lists of the same length ≥ 2")
            if split:
                halves = {h for h, names in split.items() for f in files if f in names}
                if len(halves) != 1:
                    problems.append(f"{where}: files {files} are not all in one half of split.json")
            evidence = [e for e in (q.get("evidences") or [q["evidence"]])]
            if q["kind"] == "compare":
                texts = [page_text(f, p, folder) or "" for f, p in zip(files, pages)]
                for e in evidence:
                    if not any(on_page(e, t) for t in texts):
                        problems.append(f"{where}: evidence not on any of {list(zip(files, pages))}: {e[:80]!r}")
                continue
            text = page_text(q["file"], q["page"], folder)
            if text is None:
                problems.append(f"{where}: no page {q['page']} in {q['file']}")
                continue
            if not on_page(q["evidence"], text):
                problems.append(f"{where}: evidence not on page {q['page']}: {q['evidence'][:90]!r}")
            if q["kind"] == "document":
                if not q.get("sections") or len(q["sections"]) != len(q.get("section_pages", [])):
                    problems.append(f"{where}: document needs sections and section_pages of the same length")
    problems += [f"id {i} used {c} times" for i, c in ids.items() if c > 1]
    if split:
        named = set(split.get("tune", [])) | set(split.get("test", []))
        problems += [f"split.json: {d} in no half" for d in sorted(docs - named)]
        problems += [f"split.json: {d} not in docs/" for d in sorted(named - docs)]
    for p in problems:
        print(p)
    print(f"{sum(ids.values())} questions; " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
