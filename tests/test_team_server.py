"""A library shared on a real PostgreSQL server over TCP with password authentication, reached through
``LOCALRAG_DATABASE_URL`` as a team would: the command-line tools index, search and answer on it; clients
starting and ingesting together neither duplicate nor lose anything; a server without pgvector, a wrong
password and an unreachable host each give a one-line error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures_docs import write_pdf
from team_server import TeamServer, free_port

pytestmark = pytest.mark.slow

PAGES = [
    [
        "Harbour operations manual",
        "The harbour master assigns berths to arriving vessels.",
        "Pilots board inbound ships at the outer buoy.",
    ],
    [
        "Tide limits",
        "Vessels with a draught above nine metres enter only within two hours of high water.",
        "The tide gauge at the north pier is read every thirty minutes.",
    ],
]
NOTES = (
    "# Crane maintenance\n\nThe quay cranes are greased every Monday. A crane with a cracked sheave is "
    "taken out of service until the sheave is replaced.\n"
)


@pytest.fixture(scope="module")
def server(library, home):
    """One team server for the module (the session's library has set up the service account when root)."""
    srv = TeamServer(home / "team-server").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def team_docs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("team-docs")
    write_pdf(folder / "harbour.pdf", PAGES)
    (folder / "cranes.md").write_text(NOTES, encoding="utf-8")
    return folder


def cli(url: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``local-rag ARGS`` in a child process, its store at ``url`` (a member's data folder stays unused)."""
    env = dict(os.environ, LOCALRAG_DATABASE_URL=url)
    return subprocess.run(
        [sys.executable, "-m", "localrag", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def start_cli(url: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, LOCALRAG_DATABASE_URL=url)
    return subprocess.Popen(
        [sys.executable, "-m", "localrag", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_team_library_indexes_searches_and_answers_over_tcp(server, team_docs):
    url = server.url()
    indexed = cli(url, "ingest", str(team_docs))
    assert indexed.returncode == 0, indexed.stderr
    found = cli(url, "search", "--json", "--k", "3", "draught above nine metres high water")
    assert found.returncode == 0, found.stderr
    top = json.loads(found.stdout)["results"][0]
    assert Path(top["path"]).name == "harbour.pdf" and top["page_number"] == 2
    answer = cli(url, "ask", "--json", "When may a ship with a draught over nine metres enter the harbour?")
    assert answer.returncode == 0, answer.stderr
    evidence = json.loads(answer.stdout)["evidence"]
    assert any("two hours of high water" in s["text"] and s["page_number"] == 2 for s in evidence)
    # The data lives on the team server, as the least-privilege role's tables.
    with server.admin("library") as conn:
        owner = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'documents'").fetchone()
        titles = {r[0] for r in conn.execute("SELECT path FROM documents").fetchall()}
    assert owner == ("team",)
    assert {Path(p).name for p in titles} == {"harbour.pdf", "cranes.md"}


def test_clients_that_start_together_migrate_once(server):
    server.create_library("fresh")
    url = server.url("fresh")
    procs = [start_cli(url, "db", "migrate") for _ in range(3)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(err[-3000:] for _, err in outputs)
    applied = [int(out.split()[1]) for out, _ in outputs]
    with server.admin("fresh") as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()]
    assert len(versions) == len(set(versions)) == sum(applied)  # each migration once, by whichever came first
    assert sorted(applied, reverse=True)[1:] == [0, 0]
    # Every migration reverts and applies again on the server, as the least-privilege role.
    down = cli(url, "db", "rollback", str(len(versions)))
    assert down.returncode == 0 and f"reverted {len(versions)} migration" in down.stdout, down.stderr
    up = cli(url, "db", "migrate")
    assert up.returncode == 0 and f"applied {len(versions)} migration" in up.stdout, up.stderr


def test_two_clients_ingesting_the_same_files_at_once_neither_duplicate_nor_lose_them(server, team_docs):
    server.create_library("shared")
    url = server.url("shared")
    assert cli(url, "db", "migrate").returncode == 0
    procs = [start_cli(url, "ingest", str(team_docs)) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(err[-3000:] for _, err in outputs)
    with server.admin("shared") as conn:
        docs = conn.execute("SELECT path, status FROM documents ORDER BY path").fetchall()
        chunks = conn.execute(
            "SELECT d.path, count(*), count(DISTINCT c.chunk_index) FROM document_chunks c "
            "JOIN documents d ON d.id = c.doc_id GROUP BY d.path"
        ).fetchall()
    assert [(Path(p).name, s) for p, s in docs] == [("cranes.md", "ready"), ("harbour.pdf", "ready")]
    assert len(chunks) == 2 and all(total == distinct > 0 for _, total, distinct in chunks)


def test_connection_problems_are_one_line_errors(server, home):
    cases = {
        "wrong password": server.url(password="not-the-password"),
        "unreachable": f"postgresql://team:x@127.0.0.1:{free_port()}/library?connect_timeout=3",
    }
    bare = TeamServer(home / "team-server-bare", pgvector=False).start()
    try:
        cases["no pgvector"] = bare.url()
        for name, url in cases.items():
            result = cli(url, "search", "anything")
            assert result.returncode == 1, name
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("local-rag: "), (name, result.stderr)
            assert "not-the-password" not in lines[0]
        assert "password authentication failed" in cli(cases["wrong password"], "search", "x").stderr
        assert "pgvector" in cli(cases["no pgvector"], "search", "x").stderr
    finally:
        bare.stop()


def test_a_computer_without_the_file_shows_the_page_from_the_librarys_copy(server, team_docs, tmp_path):
    """A team member added harbour.pdf from their own disk; on another computer the file is not at that path,
    yet the cited page still renders, with its highlight, from the copy kept in the database. The same bytes
    are kept once, and the copy goes with its document."""
    import shutil

    from localrag.core.config import Settings
    from localrag.core.ingest.documents import remove_document
    from localrag.core.library import Library
    from localrag.core.retrieve.retriever import retrieve
    from localrag.core.store import files
    from localrag.gui.views.source_ref import SourceRef
    from localrag.gui.views.sources import load_source_view

    server.create_library("copies")
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(team_docs / "harbour.pdf", mine / "harbour.pdf")
    shutil.copy(team_docs / "harbour.pdf", mine / "harbour-again.pdf")
    assert cli(server.url("copies"), "ingest", str(mine)).returncode == 0

    library = Library(Settings(database_url=server.url("copies")), owner=False)
    library.open()
    try:
        with library.connect() as conn:
            stored = conn.execute("SELECT count(*), sum(bytes) FROM document_files WHERE complete").fetchone()
        assert stored == (1, (mine / "harbour.pdf").stat().st_size)  # one copy for the same bytes
        shutil.rmtree(mine)  # "another computer": the path the documents were added from does not exist here
        hit = retrieve(library, "draught above nine metres high water", k=1).results[0]
        view = load_source_view(library, SourceRef.from_result(hit))
        assert view.page is not None and view.page.rects, view.page_error
        assert "library's copy" in view.note
        copy, is_copy = files.readable_file(library, hit.doc_id, hit.path)
        assert is_copy and copy is not None
        assert copy.read_bytes() == (team_docs / "harbour.pdf").read_bytes()

        with library.connect() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM documents").fetchall()]
            assert len(ids) == 1  # the same bytes under a second name are one document
            remove_document(conn, ids[0])
            assert conn.execute("SELECT count(*) FROM document_file_parts").fetchone() == (0,)
    finally:
        library.close()
