"""Whether llama.cpp's extra weight buffers (its AMX kernels) run in this build, checked once in a child
process (``machine_check``).

On CPUs with AMX, llama.cpp can repack weights for AMX tile kernels: prompt processing then takes about half
the CPU time (docs/benchmarks.md, "Chat"). A llama.cpp compiled by GCC 12 without ``-fno-tree-dse -fno-dse``
(as ``packaging/setup.sh`` builds it) writes an incomplete tile configuration, and the first batched decode
kills the process with SIGSEGV. So the first load of a model with a given llama.cpp build decodes one batch in
a child process; the answer is kept in the cache folder, keyed by the library files, the variant of the CPU
kernels (``backends``) and the model file, and the app turns the extra buffers on only where that child came
back.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from localrag.core.llm import machine_check, openmp
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.llm.extra_buffers")

# Enough tokens for one batch to take the AMX matrix path (it needs 32 rows or more).
PROBE_TOKENS = 96
_PROBE_TIMEOUT_S = 300


def extra_buffers_work(model: Path, *, threads: int = 0, cancel: CancelToken | None = None) -> bool:
    """Whether ``model`` loads and decodes a batch with extra buffers on, in this build (checked once).

    The check runs in a child process that this call owns: ``cancel`` ends it (and then raises ``Cancelled``).
    """
    name = f"extra-buffers.{machine_check.key(machine_check.model_part(model))}"
    answer = machine_check.recall(name)
    if answer is not None and answer.strip() in ("ok", "no"):
        return answer.strip() == "ok"
    try:
        returncode, stdout = machine_check.run_child(_probe_command(model, threads), _PROBE_TIMEOUT_S, cancel)
        works = returncode == 0 and stdout.strip().endswith("ok")
        detail = f"exit status {returncode}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        works, detail = False, type(exc).__name__
    if works:
        log.info("llama.cpp's extra weight buffers (AMX) work with %s", model.name)
    else:
        log.warning("llama.cpp's extra weight buffers fail in this build (%s); loading without them", detail)
    machine_check.remember(name, "ok\n" if works else "no\n")
    return works


def _probe_command(model: Path, threads: int) -> list[str]:
    return [sys.executable, "-m", "localrag.core.llm.probes", "extra-buffers", str(model), str(int(threads))]


_params_lock = threading.Lock()


@contextlib.contextmanager
def extra_buffer_types(enabled: bool = False) -> Iterator[None]:
    """Load with llama.cpp's CPU "extra" weight buffers (AMX/repacked kernels) turned on (or off).

    They halve prompt processing on CPUs with AMX, and crash the process in some builds (see
    ``extra_buffers``), so they are on only where a child process showed they work. llama-cpp-python does not
    expose the switch, so the default model parameters are wrapped while one model loads.
    """
    openmp.configure()
    from llama_cpp import llama_cpp  # the module llama.py resolves the defaults from

    with _params_lock:
        original = llama_cpp.llama_model_default_params

        def params():
            p = original()
            p.use_extra_bufts = enabled
            return p

        llama_cpp.llama_model_default_params = params
        try:
            yield
        finally:
            llama_cpp.llama_model_default_params = original
