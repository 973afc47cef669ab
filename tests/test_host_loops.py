"""The loops every front end runs (``host/``): the answering line and the ingest rounds, on a ``Host``'s
threads as ``local-rag serve`` runs them (the window runs the same loops on its QThreads)."""

from __future__ import annotations

import threading

from localrag.core.ingest.pipeline import Ingestor
from localrag.host import Host
from localrag.host.answer_line import AnswerLine
from localrag.host.ingest_rounds import IngestRounds


def test_the_answer_line_runs_jobs_in_order_on_its_thread_and_outlives_a_failing_one(library):
    seen: list[tuple[int, str]] = []
    done = threading.Event()
    with Host(library) as host:
        line = AnswerLine()
        host.start_task("answer-line", line.run, line.stop)
        line.submit(lambda: seen.append((1, threading.current_thread().name)))
        line.submit(lambda: 1 / 0)  # a bug in a job: logged, and the next job still runs
        line.submit(lambda: seen.append((2, threading.current_thread().name)))
        line.submit(done.set)
        assert done.wait(60)
    assert seen == [(1, "answer-line"), (2, "answer-line")]
    assert not any(t.name == "answer-line" for t in threading.enumerate())  # Host.close stopped and joined it


def test_the_answer_line_drops_what_is_still_queued_when_stopped():
    line = AnswerLine()
    ran: list[int] = []
    line.submit(lambda: ran.append(1))
    line.stop()
    line.submit(lambda: ran.append(2))
    thread = threading.Thread(target=line.run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive() and ran == []


def test_ingest_rounds_on_a_host_index_what_is_queued_and_stop_with_the_host(clean_db, tmp_path):
    note = tmp_path / "glaciers.md"
    note.write_text("# Glaciers\n\nThe glacier retreated four hundred metres between 1990 and 2020.\n")
    with Ingestor(clean_db) as queuer:
        (queued,) = queuer.enqueue([note])
    assert queued.status == "queued"
    rounds_ended = threading.Event()
    busy: list[bool] = []

    def on_busy(now: bool) -> None:
        busy.append(now)
        if not now:
            rounds_ended.set()

    with Host(clean_db, embedding=True) as host:
        rounds = IngestRounds(Ingestor(clean_db), on_busy=on_busy)
        host.start_task("ingest-rounds", rounds.run, rounds.stop)
        rounds.wake()
        assert rounds_ended.wait(120)
        assert rounds.error == "" and not rounds.busy
    assert busy == [True, False]
    assert not any(t.name == "ingest-rounds" for t in threading.enumerate())
    with clean_db.connect() as conn:
        status, chunks = conn.execute("SELECT status, chunks_embedded FROM documents").fetchone()
    assert status == "ready" and chunks > 0
