"""Before Qt starts on Linux: the X11 plugin's missing system libraries are named, with the packages to
install (Qt itself would abort without naming them)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from localrag import system_libs

LDD_ON_A_MINIMAL_SYSTEM = """\
\tlinux-vdso.so.1 (0x00007ffd4b5f2000)
\tlibQt6XcbQpa.so.6 => /opt/app/PySide6/Qt/plugins/platforms/../../lib/libQt6XcbQpa.so.6 (0x00007f0e)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms1.so.1 => not found
\tlibxcb-cursor.so.0 => not found
\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f0e3a)
\tlibxcb-icccm.so.4 => not found
"""


def test_missing_libraries_are_named_with_their_packages():
    missing = system_libs.MissingLibraries(system_libs.not_found(LDD_ON_A_MINIMAL_SYSTEM))
    assert missing.libraries == ["libxcb-icccm.so.4", "libxcb-keysyms1.so.1", "libxcb-cursor.so.0"]
    assert missing.debian[0] == "libxcb-icccm4" and "libxcb-cursor0" in missing.debian
    assert "xcb-util-wm" in missing.fedora and "xcb-util-cursor" in missing.fedora
    assert "libxcb-keysyms1.so.1" in missing.debian  # not in the table: named as ldd wrote it
    text = missing.message()
    assert "sudo apt-get install libxcb-icccm4" in text and "sudo dnf install xcb-util-wm" in text


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("ldd") is None, reason="Linux, ldd")
def test_a_plugin_whose_libraries_cannot_be_found_is_reported(tmp_path):
    """The real plugin copied away from Qt's own libraries: ldd cannot find them, and the check says which."""
    plugin = system_libs.xcb_plugin()
    assert plugin is not None
    moved = tmp_path / "libqxcb.so"
    shutil.copy(plugin, moved)
    missing = system_libs.missing_for_window(moved)
    assert missing is not None
    assert any(lib.startswith("libQt6XcbQpa") for lib in missing.libraries)


def test_ldd_resolves_with_the_bundles_folder_first_in_the_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the PyInstaller bundle the plugin's libraries are found in the bundle's folder: ldd must look there
    too, or a library the bundle carries would be reported missing."""
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/elsewhere")
    assert system_libs.ldd_environment()["LD_LIBRARY_PATH"] == "/opt/elsewhere"  # not in a bundle
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert system_libs.ldd_environment()["LD_LIBRARY_PATH"] == f"{tmp_path}{os.pathsep}/opt/elsewhere"
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert system_libs.ldd_environment()["LD_LIBRARY_PATH"] == str(tmp_path)
