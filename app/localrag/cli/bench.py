"""``local-rag bench SUBCOMMAND``: benchmarks. Each subcommand lives in a module ``bench_<name>`` that
provides ``register(subparsers)`` (setting ``func(args) -> int``) and does its own work: under
``localrag.core.eval``, or under ``localrag.gui`` for the window's (which imports Qt only when it runs)."""

from __future__ import annotations

import argparse
import importlib

# Modules under localrag.core.eval named bench_<name>, one per subcommand.
BENCHES = ["retrieval", "ingest", "chat"]
GUI_BENCHES = ["window"]  # modules under localrag.gui named bench_<name>


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmarks (latency, recall) on throw-away databases")
    benches = p.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name in BENCHES:
        importlib.import_module(f"localrag.core.eval.bench_{name}").register(benches)
    for name in GUI_BENCHES:
        importlib.import_module(f"localrag.gui.bench_{name}").register(benches)
