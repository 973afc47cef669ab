"""Checks of this machine that run once, in a child process, and are remembered in the cache folder.

Some questions about llama.cpp on this computer can only be answered by trying: whether its AMX kernels run
with this build (``extra_buffers``: a wrong build kills the process), and which weight type, attention kernel
and batch size are fastest on this CPU (``tuning``). Each runs in a child process the caller owns (``cancel``
ends it), and its answer is written to the cache folder under a key made of the llama.cpp build, the CPU
kernels in use and what was checked, so a new build, another CPU variant or another model checks again.
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
from localrag.core.llm import openmp
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.llm.machine_check")


def key(*parts: object) -> str:
    """A short key of the Python version, the llama.cpp library files (name, size, mtime), the variant of its
    CPU kernels, and ``parts``."""
    openmp.configure()
    import llama_cpp

    from localrag.core.llm.backends import cpu_backend

    items = [sys.version.split()[0], cpu_backend().variant]
    lib = Path(llama_cpp.__file__).parent / "lib"
    for f in sorted(lib.iterdir()) if lib.is_dir() else []:
        if f.is_file():
            st = f.stat()
            items.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
    items += [str(p) for p in parts]
    return hashlib.sha256("|".join(items).encode()).hexdigest()[:16]


def model_part(model: Path) -> str:
    """What identifies a model file in a key: its name and size."""
    return f"{model.name}:{model.stat().st_size}"


def recall(name: str) -> str | None:
    """The remembered answer ``name`` (a file in the cache folder), if any."""
    data = recall_bytes(name)
    return data.decode("utf-8", "replace") if data is not None else None


def recall_bytes(name: str) -> bytes | None:
    try:
        return (paths.cache_dir() / name).read_bytes()
    except OSError:
        return None


def remember(name: str, data: str | bytes) -> None:
    """Keep ``data`` as the answer ``name``, written whole or not at all."""
    path = paths.cache_dir() / name
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        tmp.replace(path)
    except OSError as exc:  # a read-only cache only means checking again next time
        log.debug("cannot record %s: %s", path, exc)


def prune(pattern: str, keep: int) -> None:
    """Remove all but the ``keep`` most recently written answers whose names match ``pattern`` (answers for
    builds, settings or models no longer in use would otherwise pile up)."""
    try:
        found = sorted(paths.cache_dir().glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in found[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()


def run_child(command: list[str], timeout_s: float, cancel: CancelToken | None) -> tuple[int, str]:
    """Run ``command`` with llama.cpp's threads waiting passively (unless the environment says otherwise);
    return its exit status and standard output. Kill it and wait for it when ``cancel`` is set (then raise
    ``Cancelled``) or when it outlives ``timeout_s`` (then raise ``subprocess.TimeoutExpired``)."""
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as proc:
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None:
            if (cancel is not None and cancel.cancelled) or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                if cancel is not None:
                    cancel.raise_if_cancelled()
                raise subprocess.TimeoutExpired(command, timeout_s)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(0.1)
        stdout = proc.stdout.read() if proc.stdout is not None else ""
        return proc.returncode, stdout
