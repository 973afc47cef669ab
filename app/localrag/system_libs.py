"""The system libraries Qt's window plugin needs on Linux, checked before Qt starts (Qt itself aborts with
"could not load the Qt platform plugin" and no names), and the packages that provide the missing ones.

Imports no Qt: ``local-rag doctor`` runs it too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Shared library → (Debian/Ubuntu package, Fedora package), for every library of the X11 (xcb) plugin that a
# minimal system may lack.
PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-xinerama.so.0": ("libxcb-xinerama0", "libxcb"),
    "libxcb-xinput.so.0": ("libxcb-xinput0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libSM.so.6": ("libsm6", "libSM"),
    "libICE.so.6": ("libice6", "libICE"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libGLX.so.0": ("libglx0", "libglvnd-glx"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
}

_NOT_FOUND = re.compile(r"^\s*(\S+)\s*=>\s*not found", re.MULTILINE)


@dataclass
class MissingLibraries:
    """What the X11 window plugin cannot load, and how to install it."""

    libraries: list[str]

    @property
    def debian(self) -> list[str]:
        return _packages(self.libraries, 0)

    @property
    def fedora(self) -> list[str]:
        return _packages(self.libraries, 1)

    def message(self) -> str:
        lines = [
            "The window cannot open: Qt's X11 plugin needs system libraries that are missing: "
            + ", ".join(self.libraries)
            + ".",
            "  Debian/Ubuntu: sudo apt-get install " + " ".join(self.debian),
            "  Fedora:        sudo dnf install " + " ".join(self.fedora),
            "The command-line tools (local-rag --help) need none of them.",
        ]
        return "\n".join(lines)


def _packages(libraries: list[str], column: int) -> list[str]:
    names = [PACKAGES[lib][column] if lib in PACKAGES else lib for lib in libraries]
    return list(dict.fromkeys(names))


def not_found(ldd_output: str) -> list[str]:
    """The libraries ``ldd`` printed as "not found" (each once, in order)."""
    return list(dict.fromkeys(_NOT_FOUND.findall(ldd_output)))


def xcb_plugin() -> Path | None:
    """PySide6's X11 platform plugin, if PySide6 is installed (found without importing Qt)."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    plugin = Path(next(iter(spec.submodule_search_locations))) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.is_file() else None


def missing_for_window(plugin: Path | None = None) -> MissingLibraries | None:
    """The libraries the X11 plugin (default: PySide6's) lacks on this Linux machine, or None when nothing is
    missing or it cannot be told (not Linux, no ``ldd``, no plugin)."""
    if not sys.platform.startswith("linux"):
        return None
    plugin = plugin or xcb_plugin()
    ldd = shutil.which("ldd")
    if plugin is None or ldd is None:
        return None
    try:
        out = subprocess.run(
            [ldd, str(plugin)], capture_output=True, text=True, timeout=20, check=False, env=ldd_environment()
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    missing = not_found(out)
    return MissingLibraries(missing) if missing else None


def ldd_environment() -> dict[str, str]:
    """The environment ``ldd`` runs in: the library path Qt's plugin is loaded with in this process.

    In the self-contained bundle (packaging/), the launcher put the bundle's folder first on this process's
    library path and ``packaging/entry.py`` gave the other programs the system's path back; ``ldd`` gets the
    bundle's folder again, so that a library the bundle carries is not reported missing.
    """
    env = dict(os.environ)
    bundle = getattr(sys, "_MEIPASS", None)  # set in the PyInstaller bundle only
    if bundle:
        env["LD_LIBRARY_PATH"] = os.pathsep.join([bundle, *filter(None, [env.get("LD_LIBRARY_PATH")])])
    return env


def uses_x11() -> bool:
    """Whether Qt will open its window through X11 here: on Linux, unless another platform is asked for or a
    Wayland session is running."""
    if not sys.platform.startswith("linux"):
        return False
    chosen = os.environ.get("QT_QPA_PLATFORM", "")
    if chosen:
        return chosen.split(";")[0].split(":")[0] == "xcb"
    return not os.environ.get("WAYLAND_DISPLAY")
