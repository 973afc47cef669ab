"""``local-rag bench SUBCOMMAND``: benchmarks. Each subcommand lives in a module ``bench_<name>``: under
``localrag.eval`` with ``register(subparsers)`` (setting ``func(args) -> int``), or, for those that drive
the real window, under ``localrag.devtools`` with ``main(argv) -> int``, imported only when it runs."""

from __future__ import annotations

import argparse
import functools
import importlib

# Modules under localrag.eval named bench_<name>, one per subcommand.
BENCHES = ["retrieval", "ingest", "chat", "api", "load"]
# Modules under localrag.devtools named bench_<name>, with what each measures; they parse their own arguments.
TOOL_BENCHES = {
    "window": "drop a folder on the real window and measure its event loop while it indexes",
    "documents-list": "time the documents panel (show, search, filter, sort, scroll) over N documents",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmarks (latency, recall) on throw-away databases")
    benches = p.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name in BENCHES:
        importlib.import_module(f"localrag.eval.bench_{name}").register(benches)
    for name, summary in TOOL_BENCHES.items():
        # Every argument, options and --help included, goes to the tool's own parser.
        tool = benches.add_parser(name, help=summary, add_help=False, prefix_chars="\0")
        tool.add_argument("argv", nargs="*")
        tool.set_defaults(func=functools.partial(_run_tool, name))


def _run_tool(name: str, args: argparse.Namespace) -> int:
    module = name.replace("-", "_")
    return int(importlib.import_module(f"localrag.devtools.bench_{module}").main(args.argv))
