"""Grounded chat: the local LLM, prompts with numbered sources, citations and history."""

import logging
import os
import sys

# llama.cpp's CPU threads meet at OpenMP barriers after every operation. With the default (spinning) wait policy,
# a thread that the OS has descheduled — because ingestion, the embedding model or another program is using a
# core — stalls the others: measured here under load, prompt processing 4-6x and generation 10x slower than with
# passive waiting (docs/benchmarks.md, "Chat"). Passive waiting may cost a little on an idle machine. It must be
# set before llama.cpp (and its libgomp) loads; an explicit OMP_WAIT_POLICY in the environment wins.
if "llama_cpp" in sys.modules and "OMP_WAIT_POLICY" not in os.environ:
    logging.getLogger("localrag.llm").warning(
        "llama_cpp was imported before localrag.core.chat: its threads spin at barriers and slow down under load"
    )
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
