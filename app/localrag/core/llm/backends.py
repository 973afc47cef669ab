"""Which build of llama.cpp's CPU kernels runs: the best variant for this CPU, chosen once per process.

``packaging/setup.sh`` builds llama.cpp once for every CPU of an architecture: its CPU backend is compiled
several times, each a library of its own for one CPU family (``libggml-cpu-haswell.so`` for AVX2,
``-skylakex`` for AVX-512, ``-icelake`` with VNNI, ``-zen4`` with BF16, ``-sapphirerapids`` with AMX...).
Such a build has no CPU kernels until one is loaded, and llama-cpp-python does not load them (llama.cpp's own
search looks next to the Python executable and in the current folder, not in the package). So before the
first model is loaded, ``cpu_backend`` asks each variant in the package's library folder how well it fits
this CPU (its ``ggml_backend_score``: 0 when the CPU lacks an instruction it needs, else higher for more
features, as llama.cpp scores them) and loads the best.

``LOCALRAG_CPU_VARIANT`` (e.g. ``haswell``) loads that variant instead, to see how the app runs on a CPU with
fewer features; a variant this CPU cannot run, or one the build does not have, is reported and the best one
is loaded instead. A build for one CPU (llama.cpp's default, or macOS) has its kernels built in: it is
reported as ``built-in``.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localrag.core.errors import ModelMissing
from localrag.core.llm import openmp

log = logging.getLogger("localrag.llm.backends")

VARIANT_ENV = "LOCALRAG_CPU_VARIANT"
BUILT_IN = "built-in"


@dataclass(frozen=True)
class CpuBackend:
    """The CPU kernels in use.

    Attributes:
        variant: the variant's name (``zen4``, ``haswell``...), or ``built-in`` for a build for one CPU.
        features: what the kernels use, as llama.cpp lists them (``AVX2``, ``AVX512_BF16``, ``AMX_INT8``...).
        path: the variant's library ('' when built in).
        scores: every variant of the build with its score on this CPU (0: cannot run here).
        forced: whether ``LOCALRAG_CPU_VARIANT`` chose it.
        note: why the requested variant is not the one running, if so.
    """

    variant: str
    features: tuple[str, ...] = ()
    path: str = ""
    scores: dict[str, int] = field(default_factory=dict)
    forced: bool = False
    note: str = ""

    def describe(self) -> str:
        """One line for people: ``zen4 (AVX2, AVX512, AVX512_BF16...)``, and ``, forced`` when chosen by the
        environment."""
        simd = [f for f in self.features if f not in _NOT_SIMD]
        text = f"{self.variant} ({', '.join(simd) or 'no SIMD'})"
        if self.forced:
            text += f", chosen by {VARIANT_ENV}"
        return text

    @property
    def runnable(self) -> list[str]:
        """The variants of the build this CPU can run, best first."""
        return [name for name, score in sorted(self.scores.items(), key=lambda kv: -kv[1]) if score > 0]


# Features the CPU backend lists that say how it was built rather than which instructions it uses.
_NOT_SIMD = {"OPENMP", "REPACK", "LLAMAFILE", "CPU_HBM", "KLEIDIAI", "ACCELERATE"}

_lock = threading.Lock()
_backend: CpuBackend | None = None


class _Feature(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


def cpu_backend() -> CpuBackend:
    """The CPU kernels of this process, loading the best variant first if none is loaded (once; thread-safe).

    Raises:
        ModelMissing: llama-cpp-python is missing, or no variant of its CPU kernels runs on this CPU.
    """
    global _backend
    with _lock:
        if _backend is None:
            _backend = _load()
        return _backend


def _load() -> CpuBackend:
    try:
        openmp.configure()
        import llama_cpp
    except ImportError as exc:
        raise ModelMissing(f"llama-cpp-python is not installed: {exc}") from exc
    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    ggml = _ggml(lib_dir)
    cpu = ggml.ggml_backend_reg_by_name(b"CPU")
    if cpu:  # built in (a build for one CPU), or loaded by another part of this process
        return CpuBackend(
            BUILT_IN if not _variant_files(lib_dir) else "loaded elsewhere", _features(ggml, cpu)
        )
    files = _variant_files(lib_dir)
    if not files:
        raise ModelMissing(f"llama.cpp has no CPU kernels: no {_prefix()}cpu-* library in {lib_dir}.")
    scores = {name: _score(path) for name, path in files.items()}
    order = [name for name, score in sorted(scores.items(), key=lambda kv: -kv[1]) if score > 0]
    if not order:
        raise ModelMissing(
            "None of llama.cpp's CPU kernels runs on this processor (the build has "
            + ", ".join(sorted(files))
            + ")."
        )
    wanted = os.environ.get(VARIANT_ENV, "").strip().lower()
    note = ""
    if wanted and wanted not in scores:
        note = f"{VARIANT_ENV}={wanted}: this build has no such variant (it has {', '.join(sorted(files))})"
    elif wanted and scores[wanted] == 0:
        note = (
            f"{VARIANT_ENV}={wanted}: this processor cannot run that variant (it can run {', '.join(order)})"
        )
    elif wanted:
        order.remove(wanted)
        order.insert(0, wanted)
    if note:
        log.warning("%s; using %s", note, order[0])
    from localrag.core.llm.quiet import quiet_stderr

    for name in order:
        with quiet_stderr():  # ggml says which file it loaded; the log below says it once
            reg = ggml.ggml_backend_load(str(files[name]).encode())
        if reg:
            backend = CpuBackend(
                name,
                _features(ggml, reg),
                str(files[name]),
                scores,
                forced=bool(wanted) and name == wanted,
                note=note,
            )
            log.info("llama.cpp CPU kernels: %s", backend.describe())
            return backend
        log.warning("llama.cpp's %s CPU kernels did not load from %s", name, files[name])
        note = note or f"the {name} kernels did not load"
    raise ModelMissing(f"llama.cpp's CPU kernels did not load from {lib_dir}.")


def _prefix() -> str:
    return "ggml-" if sys.platform == "win32" else "libggml-"


def _variant_files(lib_dir: Path) -> dict[str, Path]:
    """``{variant: library}`` of the CPU backend variants next to llama.cpp's libraries."""
    prefix = _prefix() + "cpu-"
    suffix = ".dll" if sys.platform == "win32" else ".so"
    if not lib_dir.is_dir():
        return {}
    return {
        p.name[len(prefix) : -len(suffix)]: p
        for p in sorted(lib_dir.iterdir())
        if p.name.startswith(prefix) and p.name.endswith(suffix) and p.is_file()
    }


def _score(path: Path) -> int:
    """The variant's own answer to how well it fits this CPU (0: it needs instructions this CPU lacks). Its
    score function is compiled without the variant's instruction set, so it runs on any CPU."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        log.warning("cannot open %s: %s", path.name, exc)
        return 0
    try:
        fn = lib.ggml_backend_score
    except AttributeError:
        return 0
    fn.restype = ctypes.c_int
    fn.argtypes = []
    return int(fn())


def _ggml(lib_dir: Path) -> Any:
    """llama.cpp's ``libggml`` as ``libllama`` uses it, with the registry functions typed.

    The symbols are looked up through llama_cpp's own handle on ``libllama``, which searches the libraries it
    depends on: the wheel holds ``libggml.so`` and ``libggml.so.0`` as separate files, and opening the first
    by path would load a second copy of ggml with a registry of its own.
    """
    openmp.configure()
    from llama_cpp import llama_cpp as bindings

    ggml: Any = getattr(bindings, "_lib", None)
    if ggml is None or not hasattr(ggml, "ggml_backend_load"):
        names = {"win32": "ggml.dll", "darwin": "libggml.dylib"}
        ggml = ctypes.CDLL(str(lib_dir / names.get(sys.platform, "libggml.so")))
    ggml.ggml_backend_reg_by_name.restype = ctypes.c_void_p
    ggml.ggml_backend_reg_by_name.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load.restype = ctypes.c_void_p
    ggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_reg_get_proc_address.restype = ctypes.c_void_p
    ggml.ggml_backend_reg_get_proc_address.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    return ggml


def _features(ggml: Any, reg: int) -> tuple[str, ...]:
    """The features the CPU backend ``reg`` lists as in use (``ggml_backend_get_features``)."""
    address = ggml.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_get_features")
    if not address:
        return ()
    get = ctypes.CFUNCTYPE(ctypes.POINTER(_Feature), ctypes.c_void_p)(address)
    items = get(reg)
    out: list[str] = []
    i = 0
    while items[i].name is not None:
        name = items[i].name.decode("utf-8", "replace")
        value = (items[i].value or b"").decode("utf-8", "replace")
        out.append(name if value == "1" else f"{name}={value}")
        i += 1
    return tuple(out)
