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
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    try:
        texts = [
            f"Passage {i} about river deltas and the sediment they carry to the sea. " * 8 for i in range(128)
        ]
        batch = service.submit(texts, BATCH)
        while service.busy_since is None:  # the batch is being embedded
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
        thread.join(timeout=60)
    assert not thread.is_alive()
