"""Whether llama.cpp's extra weight buffers (its AMX kernels) run in this build, checked once in a child
process.

On CPUs with AMX, llama.cpp can repack weights for AMX tile kernels: prompt processing then takes about half
the CPU time (docs/benchmarks.md, "Chat"). A llama.cpp compiled by GCC 12 without ``-fno-tree-dse -fno-dse``
(as ``packaging/setup.sh`` builds it) writes an incomplete tile configuration, and the first batched decode
kills the process with SIGSEGV. So the first load of a model with a given llama.cpp build decodes one batch in
a child process; the answer is kept in the cache folder, keyed by the library files and the model file, and
the app turns the extra buffers on only where that child came back.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from localrag.core import paths
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.llm.extra_buffers")

# Enough tokens for one batch to take the AMX matrix path (it needs 32 rows or more).
_PROBE_TOKENS = 96
_PROBE_TIMEOUT_S = 300


def extra_buffers_work(model: Path, *, threads: int = 0, cancel: CancelToken | None = None) -> bool:
    """Whether ``model`` loads and decodes a batch with extra buffers on, in this build (checked once).

    The check runs in a child process that this call owns: ``cancel`` ends it (and then raises ``Cancelled``).
    """
    marker = paths.cache_dir() / f"extra-buffers.{_key(model)}"
    for answer in (True, False):
        if marker.with_suffix(f".{'ok' if answer else 'no'}").exists():
            return answer
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    try:
        returncode, stdout = _run_probe(_probe_command(model, threads), env, cancel)
        works = returncode == 0 and stdout.strip().endswith("ok")
        detail = f"exit status {returncode}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        works, detail = False, type(exc).__name__
    if works:
        log.info("llama.cpp's extra weight buffers (AMX) work with %s", model.name)
    else:
        log.warning("llama.cpp's extra weight buffers fail in this build (%s); loading without them", detail)
    _write(marker.with_suffix(".ok" if works else ".no"))
    return works


def _run_probe(command: list[str], env: dict[str, str], cancel: CancelToken | None) -> tuple[int, str]:
    """Run the probe; kill it and wait for it when ``cancel`` is set or it outlives ``_PROBE_TIMEOUT_S``."""
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as proc:
        deadline = time.monotonic() + _PROBE_TIMEOUT_S
        while proc.poll() is None:
            if (cancel is not None and cancel.cancelled) or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                if cancel is not None:
                    cancel.raise_if_cancelled()
                raise subprocess.TimeoutExpired(command, _PROBE_TIMEOUT_S)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(0.1)
        stdout = proc.stdout.read() if proc.stdout is not None else ""
        return proc.returncode, stdout


def _probe_command(model: Path, threads: int) -> list[str]:
    return [sys.executable, "-m", "localrag.core.chat.extra_buffers", str(model), str(int(threads))]


def _key(model: Path) -> str:
    """The llama.cpp library files (name, size, mtime) and the model (name, size)."""
    import llama_cpp

    parts = [sys.version.split()[0]]
    lib = Path(llama_cpp.__file__).parent / "lib"
    for f in sorted(lib.iterdir()) if lib.is_dir() else []:
        if f.is_file():
            st = f.stat()
            parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
    parts.append(f"{model.name}:{model.stat().st_size}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _write(path: Path) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text("checked\n")
        tmp.replace(path)
    except OSError as exc:  # a read-only cache only means checking again next time
        log.debug("cannot record %s: %s", path, exc)


def _probe(model: Path, threads: int) -> None:
    """Load ``model`` with extra buffers and decode one batch; print ``ok`` if the process survives."""
    from localrag.core.chat.llm import LocalLLM

    llm = LocalLLM(model, n_ctx=512, threads=threads, extra_bufts=True)
    tokens = llm.tokenize("The quick brown fox jumps over the lazy dog. " * 16)[:_PROBE_TOKENS]
    llm.llama.eval(tokens)
    print("ok", flush=True)


if __name__ == "__main__":
    _probe(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
