"""How llama.cpp's OpenMP threads wait, set once before llama.cpp (and its libgomp) loads.

llama.cpp's CPU threads meet at OpenMP barriers after every operation. With libgomp's default wait (spinning
for long), a thread that the OS has descheduled — because ingestion, the embedding model or another program
is using a core — stalls the others: measured here under load, prompt processing 4-6x and generation 10x
slower (docs/benchmarks.md, "Chat"). Waiting threads spin briefly, then sleep; and ``cores.CoreWatch`` runs
one thread fewer when another program keeps a core busy. libgomp reads both settings when it loads, so
``configure`` runs before the first ``import llama_cpp`` (``backends.cpu_backend`` calls it); values in the
environment win. Importing this package changes nothing.
"""

from __future__ import annotations

import logging
import os
import sys

_done = False


def configure() -> None:
    """Set the OpenMP wait policy for llama.cpp's threads, once, unless the environment already has one."""
    global _done
    if _done:
        return
    _done = True
    if "llama_cpp" in sys.modules and "OMP_WAIT_POLICY" not in os.environ:
        logging.getLogger("localrag.llm").warning(
            "llama_cpp was imported before its OpenMP settings: "
            "its threads spin at barriers and slow down under load"
        )
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("GOMP_SPINCOUNT", "10000")
