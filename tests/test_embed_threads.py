"""The embedding session's threads follow the machine's load, and the vectors do not change with them."""

from __future__ import annotations

import numpy as np


def test_the_embedding_session_stops_spinning_or_runs_fewer_threads_while_other_work_holds_cores(embedder):
    """Fault injected: the machine's busy CPU seconds, the clock and this process's CPU seconds are read from
    a script (on a shared machine another program's load cannot be controlled). The sessions opened for the
    load are the real model's, and they embed what onnxruntime's default session embeds."""
    from localrag.core.cores import CoreWatch
    from localrag.core.embed.onnx_embedder import OnnxEmbedder
    from localrag.core.embed.threads import DECIDE_EVERY_S, SessionThreads, ThreadFit, decide

    # Fewer free cores than the session's threads: they stop spinning, then there are fewer of them.
    assert decide(2.0, 2) == SessionThreads(2, True)
    assert decide(1.6, 2) == SessionThreads(2, False)
    assert decide(1.3, 2) == SessionThreads(1, False)
    assert decide(0.0, 2) == SessionThreads(1, False)
    assert decide(5.0, 4) == SessionThreads(4, True)  # more cores free than the session uses
    assert decide(3.5, 8) == SessionThreads(4, False)

    now, busy, own = [0.0], [100.0], [50.0]
    watch = CoreWatch(
        2,
        cores=2,
        busy_seconds=lambda: busy[0],
        clock=lambda: now[0],
        own_seconds=lambda: own[0],
        per_thread=False,
    )
    fitted = OnnxEmbedder(embedder.files, fit=ThreadFit(2, watch))
    assert fitted.session_threads == SessionThreads(2, True)  # the scripted clock stood still: no look yet

    texts = [
        f"Note {i}: the river carries sediment to the delta in the spring floods." * (1 + i)
        for i in range(12)
    ]
    expected = embedder.embed(texts)  # the session's fixture: whatever threads the real load chose for it

    def after(seconds: float, machine_busy: float, process_busy: float) -> SessionThreads:
        """``seconds`` pass with the machine and this process busy for that many CPU seconds; the next
        request looks at the load (``embed`` calls ``fit_to_machine``)."""
        now[0] += seconds
        busy[0] += machine_busy
        own[0] += process_busy
        vectors = fitted.embed(texts)
        assert np.allclose(vectors, expected, atol=1e-5), np.abs(vectors - expected).max()
        return fitted.session_threads

    # Another program took two thirds of a core from the two spinning threads: one thread.
    assert after(DECIDE_EVERY_S, 20.0, 13.3) == SessionThreads(1, False)
    options = fitted.session.get_session_options()
    assert options.intra_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    # The other program now uses a third of a core; not yet time to look again: the session stays.
    assert after(DECIDE_EVERY_S / 2, 5.0 + 5 / 3, 5.0) == SessionThreads(1, False)
    # Then the look (over both): two threads that do not spin.
    assert after(DECIDE_EVERY_S, 11.0 + 10 / 3, 11.0) == SessionThreads(2, False)
    options = fitted.session.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    # Only this process's own work: the quiet machine's session again, onnxruntime's default threads.
    assert after(DECIDE_EVERY_S, 19.5, 19.5) == SessionThreads(2, True)
    assert fitted.session.get_session_options().intra_op_num_threads == 0


def test_long_texts_run_a_few_at_a_time_and_get_the_vectors_they_get_alone(embedder, monkeypatch):
    from localrag.core.embed.onnx_embedder import RUN_WORD_PIECES

    texts = [f"Note {i}: the pump needs a check." for i in range(20)]
    texts += [" ".join(f"word{i}x{j} valve pressure" for j in range(40)) for i in range(6)]
    runs: list[tuple[int, int]] = []
    real_run = embedder._run

    def recorded(encodings):
        runs.append((len(encodings), max(len(e.ids) for e in encodings)))
        return real_run(encodings)

    monkeypatch.setattr(embedder, "_run", recorded)
    together = embedder.embed(texts, batch_size=32)
    assert all(rows == 1 or rows * width <= RUN_WORD_PIECES for rows, width in runs), runs
    assert any(rows > 1 for rows, _ in runs)  # short texts still share a run
    alone = np.vstack([embedder.embed([t]) for t in texts[-3:] + texts[:2]])
    assert np.allclose(together[-3:], alone[:3], atol=1e-4)
    assert np.allclose(together[:2], alone[3:], atol=1e-4)
