# PyInstaller hook for PySide6.QtGui: PyInstaller's own, without Qt's GTK 3 theme plugin (libqgtk3.so).
# That plugin would bring this machine's cairo, pango and GDK libraries into the bundle, to be loaded beside
# another system's GTK 3; the app draws its own Fusion palette (gui/theme.py) and needs no GTK theme.
from PyInstaller.utils.hooks.qt import add_qt6_dependencies

hiddenimports, binaries, datas = add_qt6_dependencies(__file__)
binaries = [(src, dest) for src, dest in binaries if not src.endswith("libqgtk3.so")]
