"""Memory bounded by design, not by file size: text, Markdown, HTML and DOCX are read in windows and their
chunks written as they are cut; ZIP members are inflated with a running count; a document over the chunk
limit is refused.

The peak memory of real `local-rag ingest` processes is read from the kernel (``VmHWM``) on files generated
here: a one-line text of 60 MB, a DOCX zip bomb that lies about its size, a large Markdown and a large HTML
file, and a 22 MB text read through to the limit. No fakes.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest

import fixtures_docs as fx
from localrag.core.errors import BadDocument
from localrag.core.ingest import loaders
from localrag.core.ingest.chunking import chunk_pages
from localrag.core.ingest.loaders import archive, streams
from localrag.core.ingest.loaders.markdown import HeadingParser, parse_headings
from localrag.core.ingest.types import Page

LIMIT_MB = 1500
WORDS = (
    "river delta sediment survey sample basin glacier moraine valley current tide estuary channel bank "
    "flood plain silt clay sand gravel erosion deposit layer core depth season flow"
).split()


def _words(n: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _write_repeated(path: Path, head: str, block: str, tail: str, megabytes: int) -> Path:
    """``head``, then ``block`` repeated to about ``megabytes`` MB, then ``tail`` (a block at a time)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(head)
        for _ in range(max(1, (megabytes << 20) // len(block))):
            f.write(block)
        f.write(tail)
    return path


def _ingest_peak(path: Path, env: dict[str, str] | None = None) -> tuple[int, float, dict]:
    """Run `local-rag ingest --json` on ``path`` in a child process: its exit code, its peak resident memory
    in MB, and its summary. ``VmHWM`` is read by the child itself: ``ru_maxrss`` would carry over the (large)
    forking test process."""
    code = (
        "import re, sys\n"
        "from localrag.__main__ import main\n"
        "try:\n"
        "    rc = main(['ingest', sys.argv[1], '--json'])\n"
        "finally:\n"
        "    hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "    print('PEAK_KB', hwm, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=900,
    )
    assert "PEAK_KB" in result.stderr, result.stderr[-2000:]
    peak_mb = int(result.stderr.rsplit("PEAK_KB", 1)[1].split()[0]) / 1024
    return result.returncode, peak_mb, json.loads(result.stdout)


def _failure(summary: dict) -> dict:
    (failed,) = [f for f in summary["files"] if f["status"] == "failed"]
    return failed


# -- windows -------------------------------------------------------------------------------------------------


def test_a_one_line_text_is_cut_into_bounded_windows_at_spaces():
    text = _words(60_000)  # about 400,000 characters, no newline
    pieces = list(streams.windows((text[i : i + 7_000] for i in range(0, len(text), 7_000)), size=50_000))
    assert len(pieces) >= 8
    assert "".join(t for _, t in pieces) == text
    for (offset, window), (next_offset, _) in itertools.pairwise(pieces):
        assert len(window) <= 50_000 and window.endswith(" ") and next_offset == offset + len(window)


def test_chunks_of_windows_are_exact_slices_of_the_whole_page(embedder):
    paragraphs = [_words(150, seed=n) + "." for n in range(120)]
    text = "\n\n".join(paragraphs)
    pages = [Page(1, t, offset=o) for o, t in streams.windows([text], size=20_000)]
    assert len(pages) > 3
    chunks = chunk_pages(pages, embedder, max_tokens=200, overlap_tokens=32)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert text[c.char_start : c.char_end] == c.text and c.token_count <= 256
    covered = set()
    for c in chunks:
        covered.update(range(c.char_start, c.char_end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_markdown_headings_are_found_across_windows():
    sections = []
    for n in range(300):
        sections.append(
            f"## Part {n}\n\n{_words(40, seed=n)}\n\nSetext {n}\n---------\n\n```\n# not {n}\n```\n"
        )
    text = "# Atlas\n\n" + "\n".join(sections)
    whole, title = parse_headings(text)
    parser = HeadingParser()
    found = []
    for offset, window in streams.windows([text], size=3_000):
        carried = parser.path
        for at, path in parser.feed(window):
            found.append((offset + at, path))
        parser.next_window()
        assert carried == "" or carried.startswith("Atlas")
    assert (found, parser.title) == (whole, title) and len(whole) == 601


def test_html_is_parsed_and_handed_on_in_windows(tmp_path):
    block = "".join(f"<h2>Section {n}</h2><p>{_words(60, seed=n)}</p>" for n in range(400))
    path = _write_repeated(
        tmp_path / "big.html", "<html><head><title>Big</title></head><body>", block, "</body></html>", 3
    )
    stream = loaders.open_document(path)
    pages = list(stream.pages)
    assert stream.title == "Big" and len(pages) >= 3
    assert max(len(p.text) for p in pages) <= streams.WINDOW_CHARS
    for page, following in itertools.pairwise(pages):
        assert following.offset >= page.offset + len(page.text)
        assert following.headings[0][0] == 0  # the heading in force carries over
    for page in pages:
        for at, heading in page.headings[1:]:
            assert page.text[at:].startswith(heading.split(" > ")[-1])


def test_docx_is_read_as_a_stream_in_windows(tmp_path):
    blocks = []
    for n in range(700):
        blocks += [("Heading 1", f"Chapter {n}"), ("", _words(260, seed=n))]
    path = fx.write_docx(tmp_path / "long.docx", [("Title", "Long Report"), *blocks])
    stream = loaders.open_document(path)
    pages = list(stream.pages)
    assert stream.title == "Long Report" and len(pages) >= 2
    assert max(len(p.text) for p in pages) <= streams.WINDOW_CHARS + 4_000
    found: list[str] = []
    for page in pages:
        for at, heading in page.headings:
            if at == 0 and page.offset and found and heading == found[-1]:
                continue  # the heading in force, carried over to the next window
            found.append(heading)
            assert page.text[at:].startswith(heading)
    assert found == [f"Chapter {n}" for n in range(700)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim, /proc")
def test_memory_freed_after_a_large_document_goes_back_to_the_system():
    """What ``DocumentSteps`` does after a document of 2,000 chunks or more (ready, refused or cancelled):
    the freed heap between the objects still alive is returned, where glibc alone keeps it mapped."""
    import re

    from localrag.core.ingest.memory import release_memory

    def rss_mb() -> float:
        return int(re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024

    blocks = [bytearray(2000) for _ in range(150_000)]  # 300 MB in pieces glibc's malloc serves
    survivors = blocks[::50]  # a few stay alive, scattered: the heap cannot shrink from its top
    held = rss_mb()
    del blocks
    assert rss_mb() > held - 100  # freed, yet still resident
    assert release_memory()
    assert rss_mb() < held - 200
    assert len(survivors) == 3000


# -- ZIP members ---------------------------------------------------------------------------------------------


def test_inflating_a_member_that_lies_about_its_size_stops_at_the_limit(tmp_path):
    path = fx.write_lying_docx_bomb(tmp_path / "liar.docx", megabytes=256)
    (info,) = [m for m in zipfile.ZipFile(path).infolist() if m.filename == "word/document.xml"]
    assert info.file_size == 5000  # what it claims
    tracemalloc.start()
    try:
        with pytest.raises(BadDocument) as caught:
            for _ in archive.inflate(path, info, 32 << 20):
                pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.code == "too_large" and "declared as 5,000 bytes" in caught.value.message
    assert peak < 8 << 20  # a piece at a time, never the member


def test_a_docx_bomb_that_lies_about_its_size_is_refused(tmp_path):
    with pytest.raises(BadDocument) as caught:
        loaders.load(fx.write_lying_docx_bomb(tmp_path / "liar.docx", megabytes=200))
    assert caught.value.code == "too_large"


# -- `local-rag ingest` in its own process -------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_docx_peak(library, tmp_path_factory) -> float:
    """The peak memory of a `local-rag ingest` of a small, good DOCX, into an emptied store: the yardstick for
    refusals, measured once for the tests that compare with it."""
    fx.empty_store(library)
    folder = tmp_path_factory.mktemp("good-docx")
    path = fx.write_docx(folder / "good.docx", [("Heading 1", "Survey"), ("", _words(400))])
    rc, peak, summary = _ingest_peak(path)
    assert rc == 0 and summary["ready"] == 1
    return peak


@pytest.mark.slow
def test_a_lying_zip_bomb_is_refused_within_a_good_files_memory(good_docx_peak, tmp_path):
    rc, peak, summary = _ingest_peak(fx.write_lying_docx_bomb(tmp_path / "liar.docx"))
    print(f"lying zip bomb: peak {peak:.0f} MB; good DOCX {good_docx_peak:.0f} MB")
    assert rc == 1 and _failure(summary)["error_code"] == "too_large"
    assert peak <= 1.1 * good_docx_peak and peak <= LIMIT_MB


@pytest.mark.slow
def test_huge_text_markdown_and_html_files_are_refused_early_in_bounded_memory(clean_db, tmp_path):
    """60 MB of one-line text, 40 MB of Markdown and of HTML: each would make far more chunks than the limit,
    and is refused from its first windows, before it is read through."""
    text = _write_repeated(tmp_path / "one.txt", "", _words(200_000) + " ", "", 60)
    section = "".join(f"## Part {n}\n\n{_words(80, seed=n)}\n\n" for n in range(200))
    markdown = _write_repeated(tmp_path / "big.md", "# Atlas\n\n", section, "", 40)
    body = "".join(f"<h2>Part {n}</h2><p>{_words(80, seed=n)}</p>" for n in range(200))
    html = _write_repeated(tmp_path / "big.html", "<html><body>", body, "</body></html>", 40)
    for path in (text, markdown, html):
        rc, peak, summary = _ingest_peak(path)
        failed = _failure(summary)
        print(f"{path.name}: {path.stat().st_size / 2**20:.0f} MiB, peak {peak:.0f} MB: {failed['message']}")
        assert rc == 1 and failed["error_code"] == "too_large" and "about" in failed["message"]
        assert "max_document_chunks" in failed["message"]
        assert peak <= LIMIT_MB


@pytest.mark.slow
def test_a_large_text_read_through_to_the_limit_stays_in_bounded_memory(good_docx_peak, clean_db, tmp_path):
    """22 MB of one-line text read, chunked and written all the way to the chunk limit (set near its size so
    that no early estimate stops it): memory stays near a small file's, and nothing of it is kept."""
    path = _write_repeated(tmp_path / "one.txt", "", _words(200_000) + " ", "", 22)
    rc, peak, summary = _ingest_peak(path, {"LOCALRAG_MAX_DOCUMENT_CHUNKS": "20000"})
    failed = _failure(summary)
    print(f"22 MB one-line text to the limit: peak {peak:.0f} MB (good DOCX {good_docx_peak:.0f} MB)")
    assert rc == 1 and failed["error_code"] == "too_large" and "more than 20,000 chunks" in failed["message"]
    assert peak <= LIMIT_MB and peak <= good_docx_peak + 400
    with clean_db.connect() as conn:
        kept = conn.execute(
            "SELECT count(*) FROM document_chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = %s",
            (str(path),),
        ).fetchone()[0]
    assert kept == 0
