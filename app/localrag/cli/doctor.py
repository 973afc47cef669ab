"""``local-rag doctor [--json]``: what this installation has, and what is missing."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from dataclasses import asdict, dataclass, field

from localrag.core import paths
from localrag.core.errors import KnownError
from localrag.core.llm import openmp


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    info: dict[str, object] = field(default_factory=dict)
    needed: bool = True  # False: only some uses need it (the window), so a failure is a warning


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check the installation: database, models, versions")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run_checks() -> list[Check]:
    from localrag.core.config import Settings

    settings = Settings.load()
    checks = [Check("python", sys.version_info >= (3, 10), platform.python_version())]
    checks.append(Check("data folder", True, str(paths.data_dir())))
    checks += _store_checks(settings)
    checks.append(_version_check("onnxruntime", "onnxruntime"))
    checks.append(_embedding_check(settings))
    checks.append(_llm_check(settings))
    checks.append(_window_libraries_check())
    checks.append(_icon_check())
    return checks


def _icon_check() -> Check:
    """The window's icon files (``resources/``): missing ones mean an incomplete installation or bundle."""
    icons = paths.icon_files()
    sizes = [icon.parent.parent.name for icon in icons]
    if not icons:
        return Check("app icon", False, f"no icon files in {paths.resources_dir()}", needed=False)
    return Check(
        "app icon",
        True,
        f"{len(icons)} sizes, {sizes[0]} to {sizes[-1]}",
        {"folder": str(icons[0].parents[3])},
    )


def _window_libraries_check() -> Check:
    from localrag import system_libs

    if not sys.platform.startswith("linux"):
        return Check("window libraries", True, "not needed on this system")
    plugin = system_libs.xcb_plugin()
    if plugin is None:
        return Check("window libraries", False, "PySide6's X11 plugin is not installed", needed=False)
    missing = system_libs.missing_for_window()
    if missing is None:
        return Check("window libraries", True, "everything Qt's X11 plugin needs is installed")
    return Check(
        "window libraries",
        False,
        "the window cannot open; missing " + ", ".join(missing.libraries),
        {"apt-get install": " ".join(missing.debian), "dnf install": " ".join(missing.fedora)},
        needed=False,
    )


def _version_check(name: str, module: str) -> Check:
    try:
        mod = __import__(module)
        return Check(name, True, str(getattr(mod, "__version__", "installed")))
    except Exception as exc:  # a broken native wheel raises OSError/ImportError
        return Check(name, False, f"cannot import {module}: {exc}")


def _store_checks(settings) -> list[Check]:
    from localrag.core.library import Library
    from localrag.core.store import db

    library = Library(settings, owner=False)
    try:
        library.open()
        with library.connect() as conn:
            versions = db.server_versions(conn)
        url = db.mask_password(library.conninfo)
        return [
            Check("postgresql", True, versions["postgresql"], {"url": url, "embedded": library.embedded}),
            Check("pgvector", bool(versions["pgvector"]), versions["pgvector"] or "extension not installed"),
        ]
    except KnownError as exc:
        return [Check("postgresql", False, exc.message), Check("pgvector", False, "database not reachable")]
    finally:
        library.close()


def _embedding_check(settings) -> Check:
    from localrag.core.embed.onnx_embedder import load_embedder

    try:
        emb = load_embedder(settings.embedding_model_dir or None)
        return Check(
            "embedding model",
            True,
            f"{emb.name}, {emb.dimension}-d",
            {"id": emb.name, "dimension": emb.dimension, "file": str(emb.files.onnx)},
        )
    except KnownError as exc:
        return Check("embedding model", False, exc.message)


def _llm_check(settings) -> Check:
    try:
        openmp.configure()
        import llama_cpp
    except ImportError as exc:
        return Check("llama.cpp", False, f"llama-cpp-python is not installed: {exc}")
    from localrag.core.llm.llm import LocalLLM, gguf_path, tuning_for

    try:
        path = gguf_path(settings)
        llm = LocalLLM(path, n_ctx=512, threads=1)
        backend = llm.backend
        del llm
        info: dict[str, object] = {
            "version": llama_cpp.__version__,
            "file": str(path),
            "cpu kernels": backend.describe(),
        }
        if backend.scores:
            info["cpu variants this cpu runs"] = ", ".join(backend.runnable)
        if backend.note:
            info["note"] = backend.note
        tuning = tuning_for(settings)
        if tuning is not None:
            info["tuning"] = tuning.describe()
        elif settings.llm_tuning and settings.fast_llm_copy and not settings.gguf_path:
            info["tuning"] = "not measured yet (it is, once, at the model's first load)"
        return Check(
            "llama.cpp",
            True,
            f"llama-cpp-python {llama_cpp.__version__}; model {path.name}; CPU kernels {backend.variant}",
            info,
        )
    except KnownError as exc:
        return Check("llama.cpp", False, exc.message, {"version": llama_cpp.__version__})


def run(args: argparse.Namespace) -> int:
    checks = run_checks()
    healthy = all(c.ok or not c.needed for c in checks)
    if args.json:
        print(json.dumps({"ok": healthy, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            mark = "OK " if c.ok else "ERR" if c.needed else "WRN"
            print(f"{mark} {c.name:<{width}}  {c.detail}")
            for key, value in c.info.items():
                print(f"    {'':<{width}}  {key}: {value}")
    return 0 if healthy else 1
