"""The command line: ``local-rag <command>``. Each command lives in its own module with a ``register``."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from localrag import __version__
from localrag.core.errors import KnownError

# Modules under localrag.cli, each with ``register(subparsers)`` that sets ``func(args) -> int``.
COMMANDS = ["doctor", "db", "ingest", "meta", "search", "eval", "bench", "ask", "serve"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="local-rag",
        description="Chat with your own documents, offline. With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"local-rag {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("gui", help="open the window (the default)")
    for name in COMMANDS:
        importlib.import_module(f"localrag.cli.{name}").register(sub)
    return parser


def run_cli(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KnownError as exc:
        print(f"local-rag: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("local-rag: interrupted", file=sys.stderr)
        return 130
