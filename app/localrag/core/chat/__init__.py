"""Grounded chat: the local LLM, prompts with numbered sources, citations and history."""

import logging
import os
import sys

# llama.cpp's CPU threads meet at OpenMP barriers after every operation. With libgomp's default wait (spinning
# for long), a thread that the OS has descheduled — because ingestion, the embedding model or another program
# is using a core — stalls the others: measured here under load, prompt processing 4-6x and generation 10x
# slower (docs/benchmarks.md, "Chat"). Waiting threads spin briefly, then sleep; and ``cores.CoreWatch`` runs
# one thread fewer when another program keeps a core busy. Both must be set before llama.cpp (and its libgomp)
# loads; values in the environment win.
if "llama_cpp" in sys.modules and "OMP_WAIT_POLICY" not in os.environ:
    logging.getLogger("localrag.llm").warning(
        "llama_cpp was imported before localrag.core.chat: "
        "its threads spin at barriers and slow down under load"
    )
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("GOMP_SPINCOUNT", "10000")
