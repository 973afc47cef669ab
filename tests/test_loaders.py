"""Loaders against real files written at test time: every good format reads, every bad file gets its own
code."""

from __future__ import annotations

import codecs
import os
import sys
import time
from pathlib import Path

import pytest

import fixtures_docs as fx
from localrag.core.errors import BadDocument
from localrag.core.ingest import loaders
from localrag.core.ingest.loaders import detect_type, iter_pages, load, open_document
from localrag.core.progress import Cancelled, CancelToken


def bad(path: Path, **kwargs: object) -> BadDocument:
    with pytest.raises(BadDocument) as caught:
        load(path, **kwargs)  # type: ignore[arg-type]
    error = caught.value
    assert "\n" not in error.message and error.message.strip(), error.message
    return error


# -- PDF -----------------------------------------------------------------------------------------------------


def test_pdf_pages_text_title_and_outline_headings(tmp_path: Path) -> None:
    progress: list[tuple[int, int]] = []
    doc = load(
        fx.manual_pdf(tmp_path / "manual.pdf"), on_page=lambda done, total: progress.append((done, total))
    )
    assert (doc.doc_type, doc.mime, doc.title) == ("pdf", "application/pdf", "Fixture Manual")
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert "Installing on Linux takes one command." in doc.pages[1].text
    assert "\r" not in "".join(p.text for p in doc.pages)
    assert doc.pages[0].headings == [(0, "Chapter 1")]
    # Both bookmarks start on page 2; "Installing" is found where its line starts.
    page2 = doc.pages[1]
    assert page2.headings[-1][1] == "Chapter 2 > Installing"
    assert page2.text[page2.headings[-1][0] :].startswith("Installing")
    # Page 3 carries the section in force from page 2 until "Appendix" starts mid-page.
    page3 = doc.pages[2]
    assert page3.headings[0] == (0, "Chapter 2 > Installing")
    assert page3.headings[1][1] == "Appendix" and page3.text[page3.headings[1][0] :].startswith("Appendix")
    assert doc.warnings == [] and not any(p.needs_ocr for p in doc.pages)


def test_pdf_heading_starts_at_its_section_number(tmp_path: Path) -> None:
    lines = ["The end of the previous section.", "3.2", "Installing", "Body text.", "4.1 Usage", "More text."]
    path = fx.write_pdf(
        tmp_path / "numbered.pdf", [lines], outline=[("Installing", 0, None), ("Usage", 0, None)]
    )
    page = load(path).pages[0]
    assert [page.text[offset:].split("\n", 1)[0] for offset, _ in page.headings] == ["3.2", "4.1 Usage"]


def test_pdf_heading_is_found_where_its_ligature_was_lost(tmp_path: Path) -> None:
    # Helvetica without ToUnicode gives an unnamed code as itself: 0x1E, ffi in TeX's T1 encoding.
    lines = ["The end of the previous section.", "2.1 Coe\x1ecients", "Body text."]
    path = fx.write_pdf(tmp_path / "lost.pdf", [lines], outline=[("Coefficients", 0, None)])
    page = load(path).pages[0]
    assert [page.text[offset:].split("\n", 1)[0] for offset, _ in page.headings] == ["2.1 Coeﬃcients"]


def test_pdf_streams_pages(tmp_path: Path) -> None:
    path = fx.write_pdf(tmp_path / "long.pdf", [[f"Page {i} text."] for i in range(1, 41)])
    stream = open_document(path)
    assert (stream.doc_type, stream.page_count) == ("pdf", 40)
    first = next(stream.pages)
    assert first.number == 1 and first.text == "Page 1 text."
    assert [p.number for p in stream.pages] == list(range(2, 41))
    assert [p.text for p in iter_pages(path)][-1] == "Page 40 text."


def test_pdf_cancel_between_pages(tmp_path: Path) -> None:
    path = fx.write_pdf(tmp_path / "c.pdf", [["one"], ["two"], ["three"]])
    token = CancelToken()
    with pytest.raises(Cancelled):
        load(path, cancel=token, on_page=lambda done, total: token.cancel())


def test_encrypted_pdf(tmp_path: Path) -> None:
    assert bad(fx.write_pdf(tmp_path / "secret.pdf", [["hidden"]], password="pw")).code == "encrypted"


def test_truncated_pdf(tmp_path: Path) -> None:
    error = bad(fx.truncate(fx.manual_pdf(tmp_path / "cut.pdf")))
    assert error.code == "corrupt" and "cut.pdf" in error.message


def test_binary_garbage_named_pdf(tmp_path: Path) -> None:
    (tmp_path / "noise.pdf").write_bytes(os.urandom(4096))
    assert bad(tmp_path / "noise.pdf").code == "corrupt"
    (tmp_path / "header.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(4096) + b"\n%%EOF\n")
    assert bad(tmp_path / "header.pdf").code == "corrupt"
    (tmp_path / "image.pdf").write_bytes(fx.png_bytes())
    assert bad(tmp_path / "image.pdf").code == "corrupt"


def test_scanned_pdf_without_ocr(tmp_path: Path) -> None:
    error = bad(fx.write_pdf(tmp_path / "scan.pdf", [None, None]), ocr=False)
    assert error.code == "needs_ocr" and "ocr" in error.message


def test_partly_scanned_pdf_flags_pages(tmp_path: Path) -> None:
    doc = load(
        fx.write_pdf(tmp_path / "mixed.pdf", [["Typed page."], None, ["Typed again."], None]), ocr=False
    )
    assert [p.needs_ocr for p in doc.pages] == [False, True, False, True]
    assert doc.warnings == [
        "pages 2, 4 need OCR (install the ocr extra (pip install 'localrag[ocr]'), "
        "or use the Local RAG archive with OCR)"
    ]


def test_blank_pdf_is_empty(tmp_path: Path) -> None:
    assert bad(fx.write_blank_pdf(tmp_path / "blank.pdf")).code == "empty"


def test_ocr_reads_scans_when_installed(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("rapidocr")
    from localrag.core.ingest.loaders import image

    image._engine.cache_clear()  # the OCR engine made anew, as by the first scan a command reads
    doc = load(fx.text_image_png(tmp_path / "words.png", "Invoice number 4711"))
    assert doc.doc_type == "image" and "4711" in doc.pages[0].text
    assert "[INFO]" not in capfd.readouterr().err  # the OCR library's chatter stays off the terminal


def test_ocr_reads_scanned_pdf_pages_when_installed(tmp_path: Path) -> None:
    pytest.importorskip("rapidocr")
    from PIL import Image

    picture = fx.text_image_png(tmp_path / "scan.png", "Invoice number 4711")
    with Image.open(picture) as image:
        image.convert("RGB").save(tmp_path / "scan.pdf")
    doc = load(tmp_path / "scan.pdf")
    assert "4711" in doc.pages[0].text and not doc.pages[0].needs_ocr and doc.warnings == []


# -- generic checks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["empty.pdf", "empty.txt", "empty.md", "empty.html", "empty.docx", "empty.png"]
)
def test_zero_bytes_is_empty(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"")
    assert bad(tmp_path / name).code == "empty"


def test_size_checked_before_reading(tmp_path: Path) -> None:
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as f:  # sparse: 2 GiB on paper, nothing on disk
        f.truncate(2 * 1024**3)
    assert bad(huge).code == "too_large"
    small = tmp_path / "small.txt"
    small.write_text("twelve bytes")
    assert bad(small, max_bytes=10).code == "too_large"


@pytest.mark.parametrize("name", ["data.xyz", "old.doc", "slides.pptx", "noextension"])
def test_unknown_types_unsupported(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("some words")
    assert bad(tmp_path / name).code == "unsupported"
    assert detect_type(tmp_path / name) is None


@pytest.mark.parametrize("name", ["picture.txt", "picture.md", "picture.html"])
def test_png_with_a_text_name_is_not_text(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(fx.png_bytes())
    error = bad(tmp_path / name)
    assert error.code == "unsupported" and "PNG" in error.message
    assert detect_type(tmp_path / name) is None


def test_nul_bytes_in_a_text_file(tmp_path: Path) -> None:
    (tmp_path / "blob.txt").write_bytes(b"header\x00\x01\x02" + os.urandom(2000))
    assert bad(tmp_path / "blob.txt").code == "unsupported"


def test_missing_file_unreadable(tmp_path: Path) -> None:
    assert bad(tmp_path / "gone.txt").code == "unreadable"


def test_detect_type(tmp_path: Path) -> None:
    (tmp_path / "a.MD").write_text("# Title\n")
    (tmp_path / "b.htm").write_text("<p>x</p>")
    (tmp_path / "c.jpeg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 20)
    fx.manual_pdf(tmp_path / "d.pdf")
    assert [detect_type(tmp_path / n) for n in ("a.MD", "b.htm", "c.jpeg", "d.pdf")] == [
        "markdown",
        "html",
        "image",
        "pdf",
    ]
    assert set(loaders.SUPPORTED_SUFFIXES.values()) == {"pdf", "markdown", "text", "html", "docx", "image"}
    assert loaders.check_file(tmp_path / "a.MD") == "markdown"
    (tmp_path / "e.md").write_bytes(b"")
    with pytest.raises(BadDocument, match="empty"):
        loaders.check_file(tmp_path / "e.md")


# -- text ----------------------------------------------------------------------------------------------------

SAMPLE = "Crème brûlée, naïve café façade — «déjà vu» in Zürich.\nSecond line: coöperate, Ångström.\n" * 3


@pytest.mark.parametrize(
    "encoding,prefix",
    [
        ("utf-8", b""),
        ("utf-8", codecs.BOM_UTF8),
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("utf-16-le", b""),
        ("latin-1", b""),
        ("cp1252", b""),
    ],
)
def test_text_encodings(tmp_path: Path, encoding: str, prefix: bytes) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(prefix + SAMPLE.replace("—", "-" if encoding == "latin-1" else "—").encode(encoding))
    doc = load(path)
    expected = SAMPLE.replace("—", "-") if encoding == "latin-1" else SAMPLE
    assert (doc.doc_type, doc.mime, doc.title) == ("text", "text/plain", "notes")
    assert doc.pages[0].text == expected and len(doc.pages) == 1


def test_text_newlines_normalised(tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"one\r\ntwo\rthree\n")
    assert load(tmp_path / "dos.txt").pages[0].text == "one\ntwo\nthree\n"


def test_whitespace_only_text_is_empty(tmp_path: Path) -> None:
    (tmp_path / "blank.txt").write_text(" \n\t\n  ")
    assert bad(tmp_path / "blank.txt").code == "empty"


# -- Markdown ------------------------------------------------------------------------------------------------

MARKDOWN = """---
title: The Handbook
---
# Install

Intro text.

## Linux ##

Run this:

```bash
# not a heading
make install
```

~~~
## also not a heading
~~~

Windows
-------

Double-click.

Usage
=====

### Flags `--fast`

    # indented code, not a heading
Done.
"""


def test_markdown_heading_paths(tmp_path: Path) -> None:
    path = tmp_path / "handbook.md"
    path.write_text(MARKDOWN)
    doc = load(path)
    page = doc.pages[0]
    assert (doc.doc_type, doc.title, page.text) == ("markdown", "The Handbook", MARKDOWN)
    assert [h for _, h in page.headings] == [
        "Install",
        "Install > Linux",
        "Install > Windows",
        "Usage",
        "Usage > Flags --fast",
    ]
    starts = [page.text[offset:].split("\n", 1)[0] for offset, _ in page.headings]
    assert starts == ["# Install", "## Linux ##", "Windows", "Usage", "### Flags `--fast`"]


README = """# Tool

[![Build](https://ci.example.org/badge.svg)](https://ci.example.org/) [![PyPI](https://img.example/v.svg)][pypi]

Tool renders [beautiful tracebacks](https://docs.example.org/traceback.html) in the terminal.

<details>
<summary>Progress bars</summary>

```python
print("[not a link](https://example.org)")
```

Write `[x](y)` to link, and see the [manual][docs].
</details>
"""


def test_markdown_links_and_tags_are_read_as_their_words_at_the_files_offsets(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_text(README)
    text = load(path).pages[0].text
    assert len(text) == len(README)  # every offset is still the file's
    words = " ".join(text.split())
    assert "Tool renders beautiful tracebacks in the terminal." in words
    assert words.startswith("# Tool Tool renders")  # the badges are images: nothing of them is read
    assert "Progress bars" in words and "see the manual." in words
    assert "https://docs.example.org" not in text and "<summary>" not in text and "<details>" not in text
    # Code keeps its text: a fenced block and inline code.
    assert 'print("[not a link](https://example.org)")' in text and "`[x](y)`" in text


RST = """.. _options:

=======
Options
=======

.. currentmodule:: click

Adding options is done with the :func:`option` decorator; see :ref:`the arguments <arguments>` and
``--help``.

Counting
--------

Use ``count=True`` as in the following::

    @click.option('-v', '--verbose', count=True)
    def log(verbose):
        click.echo(f"Verbosity: {verbose}")

Password Prompts
----------------

Click also supports `hidden prompts <https://example.org/prompts>`_.
"""


def test_restructuredtext_headings_and_prose_without_markup_at_the_files_offsets(tmp_path: Path) -> None:
    path = tmp_path / "options.rst"
    path.write_text(RST)
    doc = load(path)
    page = doc.pages[0]
    assert (doc.doc_type, doc.title, len(page.text)) == ("text", "Options", len(RST))
    assert [h for _, h in page.headings] == ["Options", "Options > Counting", "Options > Password Prompts"]
    words = " ".join(page.text.split())
    assert "Adding options is done with the option decorator; see the arguments and --help." in words
    assert "Use count=True as in the following: @click.option('-v'" in words  # the literal block as it is
    assert "supports hidden prompts." in words
    assert "----" not in page.text and ".. currentmodule" not in page.text and ":func:" not in page.text
    # A library indexed before reads its .rst files again, and only them.
    assert loaders.reads_differently("text", path, 1) and not loaders.reads_differently("text", path, 2)
    assert not loaders.reads_differently("text", tmp_path / "notes.txt", 1)


SPHINX_PAGE = """<html><head><title>Virtual Environments — Example 1.0 documentation</title></head><body>
<div class="related" role="navigation"><h3>Navigation</h3><ul><li><a href="index.html">index</a></li>
<li><a href="modules.html">modules</a> |</li></ul></div>
<div class="document"><div class="body" role="main">
<section><h1>Virtual Environments<a class="headerlink" href="#venv" title="Permalink">¶</a></h1>
<section><h2>Creating one<a class="headerlink" href="#c" title="Permalink">¶</a></h2>
<p>Run <code>python -m venv env</code> to create one.</p></section></section></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3><p>Quick search</p></div>
</body></html>"""


def test_html_chrome_by_role_and_heading_permalinks_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "venv.html"
    path.write_text(SPHINX_PAGE)
    doc = load(path)
    page = doc.pages[0]
    assert doc.title == "Virtual Environments"  # the <title> without the site's name after the page's h1
    assert [h for _, h in page.headings] == ["Virtual Environments", "Virtual Environments > Creating one"]
    assert "¶" not in page.text and "Run python -m venv env to create one." in page.text
    assert "Navigation" not in page.text and "Quick search" not in page.text and "modules" not in page.text


def test_html_permalink_known_by_its_title_is_dropped_from_headings_and_text(tmp_path: Path) -> None:
    path = tmp_path / "logs.html"
    path.write_text(
        "<html><body><h1>Log Files</h1>"
        '<h2 id="rotation">Log Rotation <a title="Permanent link" href="#rotation">&para;</a></h2>'
        "<p>Rotate the logs every day.</p>"
        '<p>See <a href="#rotation" title="The rotation section">rotation</a>.</p></body></html>'
    )
    page = load(path).pages[0]
    assert [h for _, h in page.headings] == ["Log Files", "Log Files > Log Rotation"]
    assert "¶" not in page.text and "See rotation." in page.text
    # Indexed before: read again only when the page holds such a link.
    plain = tmp_path / "plain.html"
    plain.write_text("<html><body><h1>Notes</h1><p>Nothing to link.</p></body></html>")
    assert loaders.reads_differently("html", path, 3) and not loaders.reads_differently("html", plain, 3)


def test_html_definition_list_keeps_each_description_on_the_line_after_its_term(tmp_path: Path) -> None:
    path = tmp_path / "options.html"
    path.write_text(
        "<html><body><h1>Options</h1><dl>"
        "<dt><span><tt>AUTO_PUSHD</tt> (<tt>-N</tt>)</span></dt>"
        "<dd><p>Make <tt>cd</tt> push the old directory onto the directory stack.</p>"
        "<p>Off by default.</p></dd>"
        "<dt><tt>CDABLE_VARS</tt></dt><dd><p>Try a parameter's value as a directory.</p></dd>"
        "</dl></body></html>"
    )
    text = load(path).pages[0].text
    assert (
        "AUTO_PUSHD (-N)\nMake cd push the old directory onto the directory stack.\n\nOff by default." in text
    )
    assert "stack.\n\nOff by default.\n\nCDABLE_VARS\nTry a parameter's value as a directory." in text
    # Indexed with the loader before this change: read again, as only a page with a definition list reads
    # differently now.
    plain = tmp_path / "plain.html"
    plain.write_text("<html><body><p>No lists here.</p></body></html>")
    assert loaders.reads_differently("html", path, 2) and not loaders.reads_differently("html", plain, 2)
    assert loaders.reads_differently("html", plain, 1) and not loaders.reads_differently("html", path, 3)


def test_html_list_items_keep_their_bullets_and_numbers(tmp_path: Path) -> None:
    path = tmp_path / "howto.html"
    path.write_text(
        "<html><body><h1>Configuring</h1><p>You can configure it in three ways:</p>"
        "<ol><li><p>In code.</p></li><li><p>With a file:</p>"
        "<ul><li>INI</li><li>YAML</li></ul></li><li>With a dictionary.</li></ol>"
        '<ol start="7"><li>Seventh.</li></ol><ul><li>Loose.</li></ul></body></html>'
    )
    text = load(path).pages[0].text
    items = "1. In code.\n\n2. With a file:\n\n  • INI\n  • YAML\n\n3. With a dictionary."
    assert "three ways:\n\n" + items in text
    assert "7. Seventh." in text and "• Loose." in text
    # Indexed before: read again only when the page holds a list.
    plain = tmp_path / "plain.html"
    plain.write_text("<html><body><p>No lists here.</p></body></html>")
    assert loaders.reads_differently("html", path, 4) and not loaders.reads_differently("html", plain, 4)


def test_an_html_page_that_only_sends_its_reader_on_is_not_indexed(tmp_path: Path) -> None:
    head = '<html><head><meta http-equiv="Refresh" content="0; url=Expansion.html#History-Expansion"></head>'
    stub = tmp_path / "History-Expansion.html"
    link = '<a href="Expansion.html">History Expansion</a>'
    stub.write_text(f"{head}<body><p>The node you are looking for is at {link}.</p></body></html>")
    problem = bad(stub)
    assert problem.code == "redirect" and "Expansion.html#History-Expansion" in str(problem)
    # A page that says more than where it goes is a page of its own.
    full = tmp_path / "moved.html"
    words = " ".join(["The history of the shell is kept in a file and read at start-up."] * 10)
    full.write_text(f"{head}<body><p>{words}</p></body></html>")
    assert "history of the shell" in load(full).pages[0].text


def test_markdown_title_from_first_h1(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_text("Some text\n\n# Real Title\n\nbody\n")
    assert load(tmp_path / "x.md").title == "Real Title"


def test_markdown_pathological_input_is_fast(tmp_path: Path) -> None:
    lines = ["#" * (i % 9) + " heading " + str(i) for i in range(10_000)]
    deep = ">" * 20_000 + " # quoted\n" + "  " * 5000 + "- nested\n"
    text = "\n".join(lines) + "\n" + deep + "#" * 200_000 + "\n" + "# " * 100_000 + "\n" + "```\n" * 3
    (tmp_path / "evil.md").write_text(text)
    started = time.thread_time()  # this thread's CPU time: other programs' load does not count
    doc = load(tmp_path / "evil.md")
    assert time.thread_time() - started < 5
    assert len(doc.pages[0].headings) > 5000
    assert all(h.count(" > ") <= 5 for _, h in doc.pages[0].headings)


# -- HTML ----------------------------------------------------------------------------------------------------

HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>Release &amp; Notes</title>
<style>body { color: red }</style><script>var hidden = "script text";</script></head>
<body>
<header><nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav></header>
<main>
<h1>Version 2</h1>
<p>The   new <b>release</b> is out &mdash; upgrade soon.</p>
<h2>Fixes</h2>
<ul><li>Faster start</li><li>Smaller files</li></ul>
<h3>Details</h3><p>See&nbsp;below.</p>
<pre>code   keeps
   its spacing</pre>
<h2>Known issues</h2><p>None.</p>
</main>
<aside>Related posts</aside>
<footer>Copyright footer</footer>
</body></html>"""


def test_html_main_text_and_headings(tmp_path: Path) -> None:
    (tmp_path / "notes.html").write_text(HTML)
    doc = load(tmp_path / "notes.html")
    text = doc.pages[0].text
    assert (doc.doc_type, doc.mime, doc.title) == ("html", "text/html", "Release & Notes")
    for gone in ("script text", "color: red", "Home", "Related posts", "Copyright footer"):
        assert gone not in text
    assert "The new release is out — upgrade soon." in text
    assert "• Faster start\n• Smaller files" in text
    assert "code   keeps\n   its spacing" in text
    paths = [h for _, h in doc.pages[0].headings]
    assert paths == [
        "Version 2",
        "Version 2 > Fixes",
        "Version 2 > Fixes > Details",
        "Version 2 > Known issues",
    ]
    for offset, path in doc.pages[0].headings:
        assert text[offset:].startswith(path.split(" > ")[-1])


def test_html_unclosed_chrome_falls_back(tmp_path: Path) -> None:
    (tmp_path / "odd.htm").write_text("<header><p>Everything is inside an unclosed header.</p>")
    assert "Everything is inside" in load(tmp_path / "odd.htm").pages[0].text


def test_html_deep_nesting(tmp_path: Path) -> None:
    depth = 100_000
    (tmp_path / "deep.html").write_text(
        "<div>" * depth + "<h2>Deep</h2><p>bottom text</p>" + "</div>" * depth
    )
    started = time.thread_time()  # this thread's CPU time: other programs' load does not count
    doc = load(tmp_path / "deep.html")
    assert time.thread_time() - started < 20
    assert "bottom text" in doc.pages[0].text and doc.pages[0].headings[0][1] == "Deep"


def test_html_without_visible_text_is_empty(tmp_path: Path) -> None:
    (tmp_path / "s.html").write_text("<html><script>only()</script><style>p{}</style></html>")
    assert bad(tmp_path / "s.html").code == "empty"


def test_html_latin1_meta_charset(tmp_path: Path) -> None:
    html = '<html><head><meta charset="iso-8859-1"></head><body><p>Caf\xe9 cr\xe8me</p></body></html>'
    (tmp_path / "l.html").write_bytes(html.encode("latin-1"))
    assert "Café crème" in load(tmp_path / "l.html").pages[0].text


# -- DOCX ----------------------------------------------------------------------------------------------------


def test_docx_headings_and_tables(tmp_path: Path) -> None:
    path = fx.write_docx(
        tmp_path / "guide.docx",
        [
            ("Title", "Admin Guide"),
            ("Heading 1", "Install"),
            ("", "Unpack the archive."),
            ("Heading 2", "Linux"),
            ("", "Use the package manager."),
            ("Heading 1", "Backups"),
            ("", "Nightly at two."),
        ],
        table=[["Host", "Role"], ["db1", "primary"]],
    )
    doc = load(path)
    page = doc.pages[0]
    assert (doc.doc_type, doc.title) == ("docx", "Admin Guide")
    assert doc.mime.endswith("wordprocessingml.document")
    assert page.text.startswith("Admin Guide\n\nInstall\n\nUnpack the archive.")
    assert page.text.endswith("Host\tRole\ndb1\tprimary")
    assert [h for _, h in page.headings] == ["Install", "Install > Linux", "Backups"]
    for offset, path_ in page.headings:
        assert page.text[offset:].startswith(path_.split(" > ")[-1])


def test_docx_list_items_keep_their_bullets_and_numbers(tmp_path: Path) -> None:
    # Word keeps an item's bullet or number out of its text: without them a list reads as loose lines
    path = fx.write_docx(
        tmp_path / "procedure.docx",
        [
            ("", "Please include in every request:"),
            ("List Bullet", "your name;"),
            ("List Bullet", "the device's asset tag."),
            ("", "Then, in order:"),
            ("List Number", "Restart the device."),
            ("List Number", "Write down the error."),
            ("List Number 2", "with its code;"),
            ("List Number", "Phone the help desk."),
            ("List Number/1", "Say your name."),
            ("List Number", "Wait for the ticket."),
        ],
    )
    assert loaders.reads_differently("docx", path, 1)
    text = load(path).pages[0].text
    assert "request:\n\n• your name;\n\n• the device's asset tag.\n\nThen, in order:" in text
    assert "1. Restart the device.\n\n2. Write down the error." in text
    assert "\n\n1. with its code;\n\n3. Phone the help desk." in text  # a list of its own in between
    # an item one level down is indented, as its list's format for that level draws it (here a bullet), and
    # the count goes on after it
    assert "3. Phone the help desk.\n\n  • Say your name.\n\n4. Wait for the ticket." in text
    plain = fx.write_docx(tmp_path / "plain.docx", [("Heading 1", "Notes"), ("", "No list here.")])
    assert load(plain).pages[0].text == "Notes\n\nNo list here."
    assert not loaders.reads_differently("docx", plain, 1)


def test_docx_zip_bomb_refused(tmp_path: Path) -> None:
    started = time.thread_time()  # this thread's CPU time: other programs' load does not count
    error = bad(fx.write_docx_bomb(tmp_path / "bomb.docx"))
    assert error.code == "too_large"
    assert time.thread_time() - started < 15


def test_docx_not_a_zip(tmp_path: Path) -> None:
    (tmp_path / "fake.docx").write_text("just text pretending")
    assert bad(tmp_path / "fake.docx").code == "corrupt"
    assert bad(fx.write_zip_without_document(tmp_path / "other.docx")).code == "corrupt"


def test_docx_truncated(tmp_path: Path) -> None:
    path = fx.write_docx(tmp_path / "cut.docx", [("", "Some text " * 50)])
    assert bad(fx.truncate(path, 0.5)).code == "corrupt"


def test_docx_without_text_is_empty(tmp_path: Path) -> None:
    assert bad(fx.write_docx(tmp_path / "blank.docx", [])).code == "empty"


# -- images -------------------------------------------------------------------------------------------------


def test_image_without_ocr(tmp_path: Path) -> None:
    (tmp_path / "scan.png").write_bytes(fx.png_bytes())
    error = bad(tmp_path / "scan.png", ocr=False)
    assert error.code == "needs_ocr" and "ocr extra" in error.message


def test_image_that_is_not_an_image(tmp_path: Path) -> None:
    (tmp_path / "photo.jpg").write_text("not a picture at all")
    assert bad(tmp_path / "photo.jpg").code == "corrupt"


# -- file names ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ['it\'s "quoted".md', "semi;colon; rm -rf.md", "new\nline.md", "tab\tand space .md", "ünïcödé 日本.md"],
)
def test_odd_file_names(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("# Heading\n\nBody.\n")
    doc = load(path)
    assert doc.pages[0].headings == [(0, "Heading")] and "\n" not in doc.title


@pytest.mark.skipif(sys.platform != "linux", reason="arbitrary bytes in file names are a Linux thing")
def test_non_utf8_file_name(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/caf\xe9 \xff\xfe.txt"
    with open(raw, "wb") as f:
        f.write(b"plain words")
    path = Path(os.fsdecode(raw))
    doc = load(path)
    assert doc.pages[0].text == "plain words"
    doc.title.encode("utf-8")  # printable, storable
    pdf_raw = os.fsencode(tmp_path) + b"/r\xe9sum\xe9\n.pdf"
    fx.write_pdf(Path(os.fsdecode(pdf_raw)), [["Resume text."]])
    assert load(Path(os.fsdecode(pdf_raw))).pages[0].text == "Resume text."
    (tmp_path / "empty\xe9.txt").write_bytes(b"")
    bad_name = Path(os.fsdecode(os.fsencode(tmp_path) + b"/bad\n\xff.pdf"))
    bad_name.write_bytes(b"junk")
    error = bad(bad_name)
    assert error.code == "corrupt"
    error.message.encode("utf-8")
