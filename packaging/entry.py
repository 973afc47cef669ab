"""The bundled app's entry point: what the ``local-rag`` console script runs (the window by default, or a
command), and also ``local-rag -m MODULE ARGS``, so that the app's child processes, started as
``sys.executable -m localrag...``, run from the bundle as they do under Python."""

import os
import runpy
import sys


def give_back_the_library_path() -> None:
    """On Linux, PyInstaller's launcher puts the bundle's folder first on ``LD_LIBRARY_PATH`` (the original
    is kept in ``LD_LIBRARY_PATH_ORIG``). This process keeps the path it started with (the dynamic loader
    reads it once); the programs the app starts — the viewer that Open launches through xdg-open, useradd,
    the database server — get the system's path back instead of the bundle's copies of system libraries."""
    if not getattr(sys, "frozen", False) or not sys.platform.startswith("linux"):
        return
    original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original:
        os.environ["LD_LIBRARY_PATH"] = original
    else:
        os.environ.pop("LD_LIBRARY_PATH", None)


if __name__ == "__main__":
    give_back_the_library_path()
    if len(sys.argv) > 2 and sys.argv[1] == "-m":
        module = sys.argv[2]
        sys.argv = [sys.argv[0], *sys.argv[3:]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        from localrag.__main__ import main

        sys.exit(main())
