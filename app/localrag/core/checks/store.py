"""The test questions, the runs and their outcomes in the library's database (``migrations/0012``), so that
everyone sharing a library shares them. Each function takes an open connection and commits nothing itself
beyond what its statements do (the caller's ``with library.connect()`` commits)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from localrag.core.checks.questions import Question
from localrag.core.checks.results import CheckRun, QuestionResult

_COLUMNS = "id, question, file, pages, answer, evidence, kind, label, extra"


def _question(row: Sequence[Any]) -> Question:
    i, question, file, pages, answer, evidence, kind, label, extra = row
    return Question(question, file, list(pages), answer, evidence, kind, label, dict(extra or {}), int(i))


def save(conn: psycopg.Connection[Any], q: Question) -> tuple[int, bool]:
    """Add ``q``, or update the question it is (its ``id``, else the same question about the same file).
    Returns its id and whether it was new. Raises ``ValueError`` for a question that names no page."""
    if not q.answerable:
        raise ValueError(f"“{q.question[:60]}” names no page that answers it")
    values = (q.question, q.file, q.pages, q.answer, q.evidence, q.kind, q.label, Jsonb(q.extra))
    if q.id is not None:
        row = conn.execute(
            "UPDATE test_questions SET question = %s, file = %s, pages = %s, answer = %s, evidence = %s, "
            "kind = %s, label = %s, extra = %s, updated_at = now() WHERE id = %s RETURNING id",
            (*values, q.id),
        ).fetchone()
        if row is not None:
            return int(row[0]), False
    row = conn.execute(
        "INSERT INTO test_questions (question, file, pages, answer, evidence, kind, label, extra) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (question, file) DO UPDATE SET pages = EXCLUDED.pages, answer = EXCLUDED.answer, "
        "evidence = EXCLUDED.evidence, kind = EXCLUDED.kind, label = EXCLUDED.label, "
        "extra = EXCLUDED.extra, updated_at = now() RETURNING id, (xmax = 0)",
        values,
    ).fetchone()
    assert row is not None
    return int(row[0]), bool(row[1])


def save_all(conn: psycopg.Connection[Any], questions: Iterable[Question]) -> tuple[int, int]:
    """Save every question in one transaction (an import: all or nothing). Returns (added, updated)."""
    added = updated = 0
    with conn.transaction():
        for q in questions:
            _, new = save(conn, q)
            added, updated = added + new, updated + (not new)
    return added, updated


def delete(conn: psycopg.Connection[Any], ids: Iterable[int]) -> int:
    """Delete these questions (their outcomes in past runs go with them; the runs' totals stay)."""
    cur = conn.execute("DELETE FROM test_questions WHERE id = ANY(%s)", (list(ids),))
    return cur.rowcount


def questions(conn: psycopg.Connection[Any]) -> list[Question]:
    """Every test question, oldest first."""
    rows = conn.execute(f"SELECT {_COLUMNS} FROM test_questions ORDER BY id").fetchall()
    return [_question(r) for r in rows]


def record(conn: psycopg.Connection[Any], run: CheckRun, results: Sequence[QuestionResult]) -> int:
    """Keep a finished run and each question's outcome in it (one transaction). Returns the run's id."""
    with conn.transaction():
        row = conn.execute(
            "INSERT INTO check_runs (started_at, seconds, questions, hit1, hit5, hit10, quoted, settings, "
            "embedding_model, llm_model, documents, chunks) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (
                run.started_at,
                run.seconds,
                run.questions,
                run.hits[1],
                run.hits[5],
                run.hits[10],
                run.quoted,
                Jsonb(run.settings),
                run.embedding_model,
                run.llm_model,
                run.documents,
                run.chunks,
            ),
        ).fetchone()
        assert row is not None
        run_id = int(row[0])
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO check_results (run_id, question_id, rank, quoted_on_page, quoted, found, "
                "seconds, error) SELECT %s, %s, %s, %s, %s, %s, %s, %s "
                "WHERE EXISTS (SELECT 1 FROM test_questions WHERE id = %s)",
                [
                    (
                        run_id,
                        r.question_id,
                        r.rank,
                        r.quoted_on_page,
                        r.quoted,
                        Jsonb(r.found),
                        r.seconds,
                        r.error,
                        r.question_id,
                    )
                    for r in results
                    if r.question_id is not None
                ],
            )
    return run_id


def runs(conn: psycopg.Connection[Any], limit: int = 100) -> list[CheckRun]:
    """The last ``limit`` runs, oldest first."""
    rows = conn.execute(
        "SELECT id, started_at, seconds, questions, hit1, hit5, hit10, quoted, settings, embedding_model, "
        "llm_model, documents, chunks FROM (SELECT * FROM check_runs ORDER BY id DESC LIMIT %s) last "
        "ORDER BY id",
        (limit,),
    ).fetchall()
    return [
        CheckRun(
            id=int(r[0]),
            started_at=r[1],
            seconds=float(r[2]),
            questions=int(r[3]),
            hits={1: int(r[4]), 5: int(r[5]), 10: int(r[6])},
            quoted=int(r[7]),
            settings=dict(r[8] or {}),
            embedding_model=r[9],
            llm_model=r[10],
            documents=int(r[11]),
            chunks=int(r[12]),
        )
        for r in rows
    ]


def last_results(conn: psycopg.Connection[Any]) -> dict[int, QuestionResult]:
    """Each question's outcome in the last run that asked it, by question id."""
    rows = conn.execute(
        "SELECT DISTINCT ON (question_id) question_id, rank, quoted_on_page, quoted, found, seconds, error "
        "FROM check_results ORDER BY question_id, run_id DESC"
    ).fetchall()
    return {
        int(r[0]): QuestionResult(int(r[0]), r[1], bool(r[2]), r[3], list(r[4] or []), float(r[5]), r[6])
        for r in rows
    }


def library_size(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """The documents ready to search and their chunks."""
    row = conn.execute(
        "SELECT count(DISTINCT d.id), count(c.id) FROM documents d "
        "LEFT JOIN document_chunks c ON c.doc_id = d.id WHERE d.status = 'ready'"
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)
