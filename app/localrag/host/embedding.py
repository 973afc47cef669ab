"""The embedding loop and its query lane on two threads of their own, for a block of work (the command line,
``serve``, benchmarks). The window runs the same two loops on its watched threads (``gui/workers.py``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from localrag.core.embed.service import EmbeddingService


@contextlib.contextmanager
def embedding_service(library: Any) -> Iterator[EmbeddingService]:
    """Serve the library's embeddings from one model while the block runs (ingestion then embeds the next
    batch while it writes the last one); the threads are stopped and joined on the way out."""
    service = EmbeddingService(lambda: library.embedder)
    threads = [
        threading.Thread(target=service.run, name="embedding", daemon=True),
        threading.Thread(target=service.serve_queries, name="embed-queries", daemon=True),
    ]
    for thread in threads:
        thread.start()
    library.embedding_service = service
    try:
        yield service
    finally:
        library.embedding_service = None
        service.stop()
        for thread in threads:
            thread.join()
