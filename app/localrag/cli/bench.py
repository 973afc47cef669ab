"""``local-rag bench SUBCOMMAND``: benchmarks. Each subcommand lives in ``localrag.core.eval.bench_<name>``,
which provides ``register(subparsers)`` (setting ``func(args) -> int``) and does its own work."""

from __future__ import annotations

import argparse
import importlib

# Modules under localrag.core.eval named bench_<name>, one per subcommand.
BENCHES = ["retrieval", "ingest", "chat"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmarks (latency, recall) on throw-away databases")
    benches = p.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name in BENCHES:
        importlib.import_module(f"localrag.core.eval.bench_{name}").register(benches)
