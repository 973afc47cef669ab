"""Renders the app icon from its SVG master into every file the window and the bundles use.

    python packaging/make_icons.py      (inside the virtual environment; needs Pillow for .ico and .icns)

Writes resources/icons/hicolor/NxN/apps/org.localrag.LocalRAG.png for each size,
resources/icons/local-rag.ico (Windows) and resources/icons/local-rag.icns (macOS). Run it again after
changing the SVG and commit the result. Each size is rendered from the vector drawing, not scaled down from
a large bitmap, so small sizes stay sharp.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from PIL import Image
from PySide6 import QtCore, QtGui, QtSvg

APP_ID = "org.localrag.LocalRAG"
ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"
SVG = ICONS / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
ICNS_SIZES = (16, 32, 64, 128, 256, 512, 1024)


def render(renderer: QtSvg.QSvgRenderer, size: int) -> Image.Image:
    image = QtGui.QImage(size, size, QtGui.QImage.Format.Format_ARGB32)
    image.fill(QtCore.Qt.GlobalColor.transparent)
    painter = QtGui.QPainter(image)
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    buffer = QtCore.QBuffer()
    buffer.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return Image.open(io.BytesIO(bytes(buffer.data().data()))).convert("RGBA")


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no window is opened
    _app = QtGui.QGuiApplication([])
    renderer = QtSvg.QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"cannot read {SVG}")
    images = {size: render(renderer, size) for size in sorted({*PNG_SIZES, *ICO_SIZES, *ICNS_SIZES})}
    for size in PNG_SIZES:
        target = ICONS / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        images[size].save(target, optimize=True)
    largest = images[max(ICO_SIZES)]
    largest.save(
        ICONS / "local-rag.ico",
        sizes=[(s, s) for s in ICO_SIZES],
        append_images=[images[s] for s in ICO_SIZES if s != max(ICO_SIZES)],
    )
    images[max(ICNS_SIZES)].save(
        ICONS / "local-rag.icns", append_images=[images[s] for s in ICNS_SIZES if s != max(ICNS_SIZES)]
    )
    print(f"wrote {len(PNG_SIZES)} PNG sizes, local-rag.ico and local-rag.icns in {ICONS}")


if __name__ == "__main__":
    main()
