"""The one embedding worker: queries go ahead of ingestion, even of the batch in hand."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from localrag.core.embed.service import BATCH, EmbeddingService


@pytest.mark.parametrize("query_lane", [True, False], ids=["own-session", "between-slices"])
def test_a_query_during_a_running_batch_does_not_wait_for_it(embedder, query_lane):
    """With the query lane, a query runs in its own session beside the batch; without it (the lane's session
    could not open), it is served between two slices of the batch. Either way it does not wait for the
    batch."""
    service = EmbeddingService(lambda: embedder, query_lane=query_lane)
    threads = [threading.Thread(target=service.run), threading.Thread(target=service.serve_queries)]
    for thread in threads:
        thread.start()
    try:
        texts = [
            f"Passage {i} about river deltas and the sediment they carry to the sea. " * 8 for i in range(128)
        ]
        batch = service.submit(texts, BATCH)
        while service.busy_since is None or (query_lane and not service.lane_open):  # the batch is in hand
            time.sleep(0.005)
        vector = service.embed_query("where do rivers leave their sediment?", timeout=120)
        query_done = time.monotonic()
        assert not batch.done(), "the query waited for the whole batch"
        vectors = batch.result(timeout=300)
        batch_done = time.monotonic()
        assert batch_done > query_done
        assert vectors.shape == (128, 384)
        assert np.allclose(vectors[5], embedder.embed([texts[5]])[0], atol=1e-5)  # slicing keeps the order
        assert np.allclose(vector, embedder.embed(["where do rivers leave their sediment?"])[0], atol=1e-5)
        assert (service._lane is not None) == query_lane
    finally:
        service.stop()
        for thread in threads:
            thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)


def test_stop_ends_both_loops_within_a_slice_of_the_batch_in_hand(embedder):
    """Stopping fails the batch in hand between two slices (it does not wait for the whole batch) and ends the
    batch loop and the query lane; nothing the service ran is left behind."""
    from localrag.core.errors import KnownError

    service = EmbeddingService(lambda: embedder)
    threads = [threading.Thread(target=service.run), threading.Thread(target=service.serve_queries)]
    for thread in threads:
        thread.start()
    texts = [f"Passage {i} about glaciers and the fresh water they hold. " * 8 for i in range(256)]
    batch = service.submit(texts, BATCH)
    while service.busy_since is None:
        time.sleep(0.005)
    service.stop()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    with pytest.raises(KnownError, match="stopped"):
        batch.result(timeout=0)
    with pytest.raises(KnownError, match="stopped"):
        service.submit(["too late"]).result(timeout=0)


def test_a_stopped_question_stops_waiting_for_the_embedding_service(library, embedder):
    """The sentences of an answer wait for the embedding service; when the person stops the question, the wait
    ends at once and nothing is computed for it (the service here has not started its loops yet: it is busy
    elsewhere, as far as the question can tell)."""
    from localrag.core.progress import Cancelled, CancelToken

    service = EmbeddingService(lambda: embedder)
    previous, library.embedding_service = library.embedding_service, service
    cancel = CancelToken()
    threads: list[threading.Thread] = []
    try:
        timer = threading.Timer(0.3, cancel.cancel)
        timer.start()
        started = time.monotonic()
        with pytest.raises(Cancelled):
            library.embed_texts(["a sentence nobody has embedded before: glaciers calve icebergs"], cancel)
        assert time.monotonic() - started < 10
        # Started now, the service skips the abandoned request and answers the next one.
        threads += [threading.Thread(target=service.run), threading.Thread(target=service.serve_queries)]
        for thread in threads:
            thread.start()
        vector = library.embed_texts(["where do icebergs come from?"])[0]
        assert np.allclose(vector, embedder.embed(["where do icebergs come from?"])[0], atol=1e-5)
    finally:
        library.embedding_service = previous
        service.stop()
        for thread in threads:
            thread.join(timeout=60)
