"""The command line: ``local-rag <command>``. Each command lives in its own module with a ``register``."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Protocol

from localrag import __version__
from localrag.core.errors import as_known, describe
from localrag.core.logs import set_up_logging

# Modules under localrag.cli, each with ``register(subparsers)`` that sets ``func(args) -> int``.
COMMANDS = [
    "doctor",
    "db",
    "ingest",
    "meta",
    "search",
    "eval",
    "bench",
    "ask",
    "chat",
    "collections",
    "checks",
]


class Command(Protocol):
    """A command of another front end (``local-rag serve``, in ``localrag.api.serve``), given by the entry
    point: the command line does not import the API."""

    def register(self, sub: argparse._SubParsersAction) -> None: ...


def build_parser(extra: Sequence[Command] = ()) -> argparse.ArgumentParser:
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
    for command in extra:
        command.register(sub)
    return parser


def run_cli(argv: list[str], extra: Sequence[Command] = ()) -> int:
    """Run one command; ``extra``: the commands of other front ends (see ``Command``)."""
    parser = build_parser(extra)
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    set_up_logging(terminal_level=logging.INFO if args.verbose else logging.WARNING)
    log = logging.getLogger(f"localrag.cli.{args.command}")
    log.info("local-rag %s %s", __version__, args.command)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("local-rag: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the environment's problem in one line; a bug's traceback goes to the log
        known = as_known(exc)
        if known is not None:
            log.info("%s", known.message)
            message = known.message
        else:
            message, _ = describe(exc, f"local-rag {args.command}", log)
        print(f"local-rag: {message}", file=sys.stderr)
        return 1
