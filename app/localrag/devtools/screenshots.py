"""Screenshots of the main views, light and dark, for the README: ``python -m localrag.devtools.screenshots``.

Each theme runs in a fresh process with its own temporary data folder: a real embedded PostgreSQL, the bundled
models, and a small library of documents written here (a PDF field guide, Markdown, a Word file, the project's
own README, two years' reports of a club, an encrypted PDF that cannot be read, and a long PDF caught while it
is being indexed). The window is driven like a user would (documents added, questions asked: one of them
compares the two reports) and grabbed to PNG files.

Options: ``--out DIR`` (default ``docs/screenshots``), ``--theme light|dark`` (default: both, each in its
own process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localrag.gui.mainwindow import MainWindow

QUESTION = "Why are there two high tides a day?"
COMPARE_QUESTION = "How did the membership fees change between the 2022 and the 2023 report?"
# Two years' reports of an invented club (Word files), for a comparison side by side.
CLUB_REPORTS = {
    2022: [
        ("Title", "Estuary Birdwatch Club Annual Report 2022"),
        ("Heading 2", "Members and money"),
        ("", "The club had 64 members at the end of the year."),
        ("", "Membership fees brought in £1,920 during the year."),
        ("", "Two guided walks a month were led on the salt marsh."),
    ],
    2023: [
        ("Title", "Estuary Birdwatch Club Annual Report 2023"),
        ("Heading 2", "Members and money"),
        ("", "The club had 71 members at the end of the year."),
        ("", "Membership fees brought in £2,130 during the year."),
        ("", "A new hide was opened by the reed beds in June."),
    ],
}

FIELD_GUIDE = {
    "Owls at night": """
        Owls are birds of prey that hunt mostly at night. Their large forward-facing eyes gather light
        well, and many species can find prey in total darkness by sound alone. The facial disc of a barn
        owl works like a satellite dish: stiff feathers funnel sound towards ears that sit at different
        heights on the head, so the owl can tell both direction and elevation of a rustle in the grass.""",
    "Silent flight": """
        An owl's flight feathers have a comb-like leading edge and a soft, velvety surface. Together
        they break up the turbulence that makes the whooshing sound of other birds' wings. Prey hears
        nothing until the talons close. Researchers study these feathers to make quieter fans and wind
        turbines.""",
    "Nightjars": """
        Nightjars rest on the ground or along branches during the day, where their mottled grey and
        brown plumage looks like bark and dead leaves. At dusk they hawk for moths with a wide gape
        fringed by bristles. The European nightjar's churring song can last for minutes without a break.""",
    "Bats are not birds": """
        Bats are the only mammals capable of true flight. Most insect-eating bats navigate by
        echolocation: they emit high-pitched calls and listen for the echoes, building a picture of
        obstacles and prey. A single pipistrelle can eat thousands of midges in one night.""",
}

TIDES_MD = """# Tides and the Moon

## Why the sea rises and falls

The Moon's gravity pulls on the whole Earth, but it pulls hardest on the side facing it and weakest on the
far side. The difference stretches the oceans into two bulges: one under the Moon and one on the opposite side
of the planet. As the Earth turns once a day beneath these two bulges, most coasts pass through two high tides
and two low tides every 24 hours and 50 minutes.

## Spring and neap tides

When the Sun and the Moon line up, at new moon and full moon, their pulls add together and the tidal range is
largest: these are spring tides. When they pull at right angles, at the quarter moons, the range is smallest:
neap tides.

## Local differences

The shape of coasts and the depth of the sea change the tides a great deal. The Bay of Fundy in Canada has a
range of more than 15 metres, while parts of the Mediterranean see only a few centimetres.
"""

GLACIER_NOTES = [
    ("Heading 1", "Glacier field notes"),
    (
        "Normal",
        "Glaciers hold about two thirds of the fresh water on Earth. They form where more snow falls in "
        "winter than melts in summer, so that the snow slowly compresses into ice.",
    ),
    ("Heading 2", "Measuring retreat"),
    (
        "Normal",
        "We marked the terminus with stakes each September. Between the first and the last survey the ice "
        "front retreated 42 metres, and the lake at its foot doubled in area.",
    ),
    ("Heading 2", "Ice cores"),
    (
        "Normal",
        "Air bubbles trapped in the ice keep samples of the atmosphere from the year the snow fell. Cores "
        "from Antarctica reach back 800,000 years and show carbon dioxide rising and falling with the ice "
        "ages.",
    ),
]


# -- documents ---------------------------------------------------------------------------------------------


def _pdf(path: Path, pages: list[list[str]], title: str, password: str | None = None) -> Path:
    """A PDF with a text layer: one list of lines per page."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
                NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
            }
        )
    )
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        escaped = [ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for ln in lines]
        ops = ["BT /F1 11 Tf 15 TL 72 730 Td"] + [f"({ln}) Tj T*" for ln in escaped] + ["ET"]
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("cp1252", "replace"))
        page[NameObject("/Contents")] = writer._add_object(stream)
    writer.add_metadata({"/Title": title})
    if password:
        writer.encrypt(user_password=password, algorithm="RC4-128")
    with open(path, "wb") as f:
        writer.write(f)
    return path


def _wrap(text: str, width: int = 88) -> list[str]:
    lines: list[str] = []
    for para in textwrap.dedent(text).split("\n\n"):
        lines += [*textwrap.wrap(" ".join(para.split()), width), ""]
    return lines


def _stdlib_pages() -> list[list[str]]:
    """About 60 pages of real, varied text: the standard library's own documentation of a few modules."""
    import pydoc

    lines: list[str] = []
    for name in ("json", "pathlib", "sqlite3", "argparse", "csv", "datetime"):
        doc = pydoc.plaintext.document(__import__(name))  # type: ignore[attr-defined]
        text = doc.encode("ascii", "ignore").decode()
        lines += [f"Module {name}", "", *[ln[:95] for ln in text.splitlines() if ln.strip()][:600]]
    return [lines[i : i + 46] for i in range(0, min(len(lines), 46 * 60), 46)]


def write_library(folder: Path, repo: Path | None) -> tuple[list[Path], Path]:
    """The documents to add first, and the long one to catch in progress."""
    from docx import Document

    folder.mkdir(parents=True, exist_ok=True)
    guide_pages = [[title, "", *_wrap(body)] for title, body in FIELD_GUIDE.items()]
    docs = [_pdf(folder / "Night birds field guide.pdf", guide_pages, "Night birds: a field guide")]
    (folder / "Tides and the Moon.md").write_text(TIDES_MD, encoding="utf-8")
    docs.append(folder / "Tides and the Moon.md")
    word = Document()
    for style, text in GLACIER_NOTES:
        word.add_paragraph(text, style=style)
    word.save(str(folder / "Glacier field notes.docx"))
    docs.append(folder / "Glacier field notes.docx")
    for year, paragraphs in CLUB_REPORTS.items():
        report = Document()
        for style, text in paragraphs:
            report.add_paragraph(text, style=style or None)
        report.save(str(folder / f"Birdwatch club report {year}.docx"))
        docs.append(folder / f"Birdwatch club report {year}.docx")
    if repo is not None and (repo / "README.md").is_file():
        shutil.copy(repo / "README.md", folder / "README.md")
        docs.append(folder / "README.md")
    docs.append(_pdf(folder / "Salaries 2024.pdf", [["Confidential"]], "Salaries", password="secret"))
    big = _pdf(folder / "Python standard library notes.pdf", _stdlib_pages(), "Python standard library notes")
    return docs, big


# -- driving the window ------------------------------------------------------------------------------------


def _wait(app: object, done: Callable[[], bool], timeout_s: float, what: str) -> None:
    from localrag.gui.qt import QtCore

    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        loop = QtCore.QEventLoop()
        QtCore.QTimer.singleShot(40, loop.quit)
        loop.exec()


def _save(widget: object, out: Path, name: str, theme_name: str) -> Path:
    path = out / f"{name}-{theme_name}.png"
    widget.grab().save(str(path))  # type: ignore[attr-defined]
    print(f"wrote {path}")
    return path


def shoot(theme_name: str, out: Path, repo: Path | None) -> None:
    """Drive one window in one theme and save its screenshots (runs in its own process)."""
    from localrag.gui.app import create_app

    app = create_app([])
    from localrag.core.config import Settings
    from localrag.core.library import Library
    from localrag.gui.mainwindow import MainWindow
    from localrag.gui.qt import QtCore, QtWidgets

    home = Path(os.environ["LOCALRAG_HOME"])
    window = MainWindow(Library(Settings.load()), layout_file=home / "window.ini")
    window.resize(1360, 860)
    window.show()
    try:
        statuses: dict[str, str] = {}
        window.start()
        _wait(
            app,
            lambda: window.embedding_worker is not None and window.embedding_worker.is_ready,
            180,
            "the model",
        )
        assert window.ingest_worker is not None  # started with the store
        window.ingest_worker.ingest_event.connect(
            lambda e: statuses.__setitem__(Path(e.path).name, e.status) if e.path else None
        )
        _wait(
            app,
            lambda: window.chat_panel.worker.model_state in ("ready", "failed"),
            300,
            "the language model",
        )
        window.statusBar().clearMessage()
        _save(window, out, "first-run", theme_name)

        docs, big = write_library(home / "Documents", repo)
        window.add_paths([str(p) for p in docs])
        names = [p.name for p in docs]
        _wait(
            app,
            lambda: all(statuses.get(n) in ("ready", "failed", "skipped") for n in names),
            600,
            "indexing",
        )

        answered: list[bool] = []
        window.chat_panel.generation_finished.connect(lambda: answered.append(True))
        window.chat_panel.ask(QUESTION)
        try:
            _wait(app, lambda: bool(answered), 300, "the answer")
        except TimeoutError as exc:
            print(f"note: {exc}", file=sys.stderr)

        window.add_paths([str(big)])
        _wait(app, lambda: statuses.get(big.name) == "embedding", 300, "the long document to start embedding")
        _wait(
            app,
            lambda: _flushed(window) and _embedded(window, big) > 0,
            300,
            "a batch",
        )
        window.documents_panel.flush()
        window.documents_panel.table.clearSelection()
        window.statusBar().clearMessage()
        _save(window, out, "main", theme_name)

        window.dev_dock.show()
        window.resize(1600, 900)
        window.resizeDocks([window.dev_dock], [560], QtCore.Qt.Orientation.Horizontal)
        _wait(app, lambda: window.dev_pane.isVisible(), 10, "the developer pane")
        QtWidgets.QApplication.processEvents()
        _save(window, out, "developer-pane", theme_name)
        window.dev_dock.hide()
        window.resize(1360, 860)

        window.overlay.setGeometry(window.rect())
        window.overlay.show()
        window.overlay.raise_()
        QtWidgets.QApplication.processEvents()
        _save(window, out, "drop", theme_name)
        window.overlay.hide()

        settings = window.open_settings()
        QtWidgets.QApplication.processEvents()
        settings.adjustSize()
        _save(settings, out, "settings", theme_name)
        settings.reject()

        about = window.show_about()
        _wait(app, lambda: about.table.rowCount() > 0, 60, "the versions")
        _save(about, out, "about", theme_name)
        about.reject()

        window.chat_panel.new_chat()
        answered.clear()
        window.chat_panel.ask(COMPARE_QUESTION)
        _wait(app, lambda: bool(answered), 300, "the comparison")
        window.statusBar().clearMessage()
        _save(window, out, "compare", theme_name)

    finally:
        if window.ingest_worker is not None:
            window.ingest_worker.cancel_all()
        window.close()


def _flushed(window: MainWindow) -> bool:
    """Apply the documents panel's pending updates now (a condition to wait on that is always met)."""
    window.documents_panel.flush()
    return True


def _embedded(window: MainWindow, path: Path) -> int:
    for row in window.documents_panel.model.rows:
        if row.path == str(path.absolute()):
            return row.chunks_embedded
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localrag.devtools.screenshots", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--theme", choices=("light", "dark"))
    parser.add_argument(
        "--repo",
        type=Path,
        default=Path(__file__).resolve().parents[3],
        help="the source tree whose README.md joins the sample library",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.theme:
        if not os.environ.get("LOCALRAG_HOME"):
            os.environ["LOCALRAG_HOME"] = tempfile.mkdtemp(prefix=f"lrag-shots-{args.theme}-")
        os.environ["LOCALRAG_THEME"] = args.theme
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        shoot(args.theme, args.out.resolve(), args.repo if args.repo.is_dir() else None)
        return 0
    for theme_name in ("light", "dark"):
        home = Path(tempfile.mkdtemp(prefix=f"lrag-shots-{theme_name}-"))
        env = dict(os.environ, LOCALRAG_HOME=str(home), LOCALRAG_THEME=theme_name)
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
        env.pop("LOCALRAG_DATABASE_URL", None)
        try:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "localrag.devtools.screenshots",
                    "--theme",
                    theme_name,
                    "--out",
                    str(args.out.resolve()),
                    "--repo",
                    str(args.repo),
                ],
                env=env,
                check=True,
            )
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
