"""Entry point: no arguments opens the window, anything else is the command line (with ``serve``, the API's
command: the entry point is the one module that knows every front end)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] == "gui":
        from localrag.gui.app import run_gui

        return run_gui(args[1:])
    import signal

    from localrag.api import serve
    from localrag.cli import run_cli

    # `kill` (or a CI timeout) stops a command the way Ctrl+C does: an ingest marks what it had not finished
    # and a benchmark stops its throw-away database, instead of leaving either behind.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    return run_cli(args, extra=[serve])


if __name__ == "__main__":
    sys.exit(main())
