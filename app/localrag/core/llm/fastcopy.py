"""The fast copy of the bundled model: its weights re-typed once, with llama.cpp's own quantizer, to the type
that runs fastest here (``fast_copy_type``), cached in the models folder.

The copy is written under a temporary name and renamed into place only when the quantizer succeeded, so a
killed conversion never leaves a half file that is used; ``load_llm`` falls back to the original on any
problem.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import threading
import time
from pathlib import Path

from localrag.core import paths
from localrag.core.errors import ModelMissing
from localrag.core.llm import openmp
from localrag.core.llm.quiet import quiet_stderr

log = logging.getLogger("localrag.llm.fastcopy")

# How long a leftover ``*.partial`` conversion file is kept before a new conversion removes it.
_STALE_PARTIAL_S = 3600


def cpu_features() -> set[str]:
    """The CPU features llama.cpp's loaded CPU kernels use, e.g. ``{"AVX2", "AVX512_BF16"}``."""
    openmp.configure()
    import llama_cpp

    from localrag.core.llm.backends import cpu_backend

    cpu_backend()

    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    found = set()
    for part in info.replace("\n", "|").split("|"):
        name, _, value = part.partition("=")
        if value.strip() == "1":
            found.add(name.split(":")[-1].strip())
    return found


def fast_copy_type() -> str:
    """The default weight type of the fast copy, ``q8_0`` (the per-machine measurement, ``tuning``, starts
    with it and may choose F16 or BF16 instead).

    Measured on a CPU with AMX (docs/benchmarks.md, "Chat"), prompt processing costs about the same CPU time
    for Q8_0, F16 and BF16 (BF16 a little more, even with AVX512_BF16) and 40% less than Q4_1; generation,
    which reads every weight per token, is fastest with Q8_0 at half the bytes of F16/BF16. Q8_0 kernels exist
    for every CPU llama.cpp supports, and re-typing Q4_1 weights to Q8_0 loses next to nothing.
    """
    return "q8_0"


def _ftype(kind: str) -> int:
    openmp.configure()
    import llama_cpp

    return {
        "bf16": llama_cpp.LLAMA_FTYPE_MOSTLY_BF16,
        "f16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
        "q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
    }[kind]


def fast_copy_path(source: Path, kind: str) -> Path:
    """Where the ``kind`` copy of ``source`` lives: named after the source and keyed by its size and mtime, so
    a changed source gets a new copy."""
    st = source.stat()
    key = hashlib.sha256(f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:12]
    return paths.models_dir() / f"{source.stem}.{kind}.{key}.gguf"


def is_gguf(path: Path) -> bool:
    """Whether ``path`` starts like a GGUF file (a quick check before offering to load a dropped file)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False


def ensure_fast_copy(source: Path, kind: str | None = None, *, threads: int = 0) -> Path:
    """The fast copy of ``source``, converting it first if it is not there yet (about a second for the bundled
    model). Safe against concurrent and killed conversions: each writes its own ``*.partial`` file and renames
    it into place only when the quantizer succeeded.

    Raises:
        ModelMissing: the conversion failed (the caller loads the original instead).
    """
    openmp.configure()
    import llama_cpp

    from localrag.core.llm.backends import cpu_backend

    cpu_backend()  # llama.cpp's quantizer runs on the CPU kernels

    kind = kind or fast_copy_type()
    dest = fast_copy_path(source, kind)
    if dest.exists() and is_gguf(dest):
        return dest
    _remove_stale_partials(dest.parent)
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.{threading.get_ident()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _ftype(kind)
    params.allow_requantize = True
    params.nthread = threads or max(1, os.cpu_count() or 1)
    started = time.monotonic()
    try:
        with quiet_stderr():
            rc = llama_cpp.llama_model_quantize(
                str(source).encode(), str(partial).encode(), ctypes.byref(params)
            )
        if rc != 0 or not is_gguf(partial):
            raise ModelMissing(f"Converting {source.name} to {kind} failed (code {rc}).")
        os.replace(partial, dest)
    except OSError as exc:
        raise ModelMissing(f"Cannot write the converted model to {dest.parent}: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()
    log.info("converted %s to %s in %.1f s: %s", source.name, kind, time.monotonic() - started, dest)
    _remove_older_copies(dest)
    return dest


def _remove_stale_partials(folder: Path) -> None:
    now = time.time()
    for p in folder.glob("*.partial"):
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > _STALE_PARTIAL_S:
                p.unlink()


def _remove_older_copies(dest: Path) -> None:
    """Copies of an earlier version of the same source (same stem and type, another key)."""
    stem, kind = dest.name.split(".")[0], dest.name.split(".")[-3]
    for p in dest.parent.glob(f"{stem}.{kind}.*.gguf"):
        if p != dest:
            with contextlib.suppress(OSError):
                p.unlink()
