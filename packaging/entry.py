"""The bundled app's entry point: what the ``local-rag`` console script runs (the window by default, or a
command), and also ``local-rag -m MODULE ARGS``, so that the app's child processes, started as
``sys.executable -m localrag...``, run from the bundle as they do under Python."""

import runpy
import sys

if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "-m":
        module = sys.argv[2]
        sys.argv = [sys.argv[0], *sys.argv[3:]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        from localrag.__main__ import main

        sys.exit(main())
