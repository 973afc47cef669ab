"""Entry point: no arguments opens the window, anything else is the command line."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] == "gui":
        from localrag.gui.app import run_gui

        return run_gui(args[1:])
    from localrag.cli import run_cli

    return run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
