"""The threads a process runs its library's loops on: one place for the window, ``serve`` and the command
line.

The core starts no thread of its own; it offers blocking loops and calls (``EmbeddingService.run`` and
``serve_queries``, a retrieval's second leg, an answer's events) and a host runs them:

- ``Host`` (``host.py``): the threads of one library in one process — the search legs (a hybrid retrieval's
  BM25 leg beside its vector leg, ``Library.executor``) and, when asked, the embedding loop and its query lane
  (``embedding.py``). The window opens one for its library (its embedding loop runs on the window's own
  watched threads, ``gui/workers.py``), ``local-rag serve`` one with the embedding loop, and each command
  that searches, answers or indexes one for its run.
- The loops every front end runs, whoever hosts them: the ingest loop (``ingest_rounds.py``) and the answering
  line (``answer_line.py``); ``serve`` runs them as tasks of its ``Host``, the window on its watched QThreads.

Nothing here imports Qt or a front end: the window, the API and the command line import the host, never one
another.
"""

from localrag.host.host import Host

__all__ = ["Host"]
