"""Builds the dataset's Word documents from the plain-text sources in sources/ (run by fetch.sh).

Source format, one block a line: ``title: ...`` (the document's title property), ``# `` the title paragraph,
``## `` and ``### `` headings (Heading 1 and 2), ``| a | b |`` table rows (the first row of a run is the
header), ``- `` bullet items; any other line is a paragraph.
    python make_docs.py SOURCES_DIR OUT_DIR
"""

from __future__ import annotations

import datetime
import sys
import zipfile
from pathlib import Path

import docx
from docx.shared import Pt


def build(source: Path, out: Path) -> None:
    document = docx.Document()
    document.styles["Normal"].font.name = "Calibri"
    document.styles["Normal"].font.size = Pt(11)
    lines = source.read_text(encoding="utf-8").splitlines()
    rows: list[list[str]] = []

    def flush_table() -> None:
        if not rows:
            return
        width = max(len(r) for r in rows)
        table = document.add_table(rows=0, cols=width)
        table.style = "Table Grid"
        for i, cells in enumerate(rows):
            row = table.add_row().cells
            for j in range(width):
                row[j].text = cells[j] if j < len(cells) else ""
                if i == 0:
                    for run in row[j].paragraphs[0].runs:
                        run.bold = True
        rows.clear()
        document.add_paragraph()

    for line in lines:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        flush_table()
        if not line.strip():
            continue
        if line.startswith("title:"):
            document.core_properties.title = line.split(":", 1)[1].strip()
        elif line.startswith("### "):
            document.add_heading(line[4:], level=2)
        elif line.startswith("## "):
            document.add_heading(line[3:], level=1)
        elif line.startswith("# "):
            document.add_heading(line[2:], level=0)
        elif line.startswith("- "):
            document.add_paragraph(line[2:], style="List Bullet")
        else:
            document.add_paragraph(line)
    flush_table()
    fixed = datetime.datetime(2024, 3, 20, 9, 0, 0)
    document.core_properties.created = fixed
    document.core_properties.modified = fixed
    document.core_properties.author = "Local RAG benchmark"
    document.save(out)
    _same_bytes_every_time(out, fixed)


def _same_bytes_every_time(path: Path, when: datetime.datetime) -> None:
    """Give every part of the saved file the same date, so that a rebuild is byte for byte the file a library
    indexed before (the zip parts otherwise carry the time of the build, and a library would take the rebuilt
    file for a new document)."""
    with zipfile.ZipFile(path) as z:
        parts = [(info, z.read(info)) for info in z.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in parts:
            fixed = zipfile.ZipInfo(info.filename, date_time=when.timetuple()[:6])
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = info.external_attr
            z.writestr(fixed, data)


def main() -> None:
    sources, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    for source in sorted(sources.glob("*.txt")):
        target = out_dir / (source.stem + ".docx")
        build(source, target)
        print(f"docs/{target.name}")


if __name__ == "__main__":
    main()
