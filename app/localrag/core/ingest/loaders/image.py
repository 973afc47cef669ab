"""Images (PNG, JPEG, TIFF, BMP, WebP): text by OCR with ``rapidocr`` (the optional ``ocr`` extra).

The OCR engine is also used by the PDF loader for pages without a text layer. Each frame of a multi-page TIFF
is a page.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import threading
from pathlib import Path
from typing import Any

from localrag.core.errors import BadDocument
from localrag.core.ingest.loaders._common import clean_title, display_name
from localrag.core.ingest.types import LoadedDocument, Page
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.ingest.ocr")

MIME_BY_SUFFIX = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".bmp": "image/bmp",
    ".webp": "image/webp",
}
# Where OCR comes from: the `ocr` extra, or the archive built with it (packaging/build.sh --ocr).
INSTALL_HINT = "install the ocr extra (pip install 'localrag[ocr]'), or use the Local RAG archive with OCR"
MAX_PIXELS = 80_000_000  # ~ an A4 page at 1,200 dpi; more is a decompression bomb, not a document
MAX_FRAMES = 500
_engine_lock = threading.Lock()


def ocr_available() -> bool:
    """Whether ``rapidocr`` is installed (it is imported only when first used)."""
    return importlib.util.find_spec("rapidocr") is not None


@functools.lru_cache(maxsize=1)
def _engine() -> Any:
    from rapidocr import RapidOCR

    # Its INFO lines (which model files it found) went to the terminal of every command that read a scan; it
    # sets its logger's level again as it loads, so they are filtered out rather than levelled.
    logging.getLogger("RapidOCR").addFilter(_warnings_only)
    return RapidOCR()


def _warnings_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def ocr_array(image: Any) -> str:
    """Text lines read from an RGB image array (``numpy``, height × width × 3), top to bottom."""
    with _engine_lock:
        result = _engine()(image)
    return "\n".join(_result_lines(result))


def _result_lines(result: Any) -> list[str]:
    """Lines from a rapidocr result: ``RapidOCROutput`` (3.x: ``.txts``) or ``([box, text, score], ...)``."""
    if result is None:
        return []
    txts = getattr(result, "txts", None)
    if txts is not None:
        return [str(t).strip() for t in txts if str(t).strip()]
    if isinstance(result, tuple) and len(result) == 2 and not isinstance(result[0], str):
        result = result[0]  # rapidocr_onnxruntime 1.x: (lines, timings)
    lines = []
    for item in result or []:
        if (
            isinstance(item, (list, tuple))
            and len(item) >= 2
            and isinstance(item[1], str)
            and item[1].strip()
        ):
            lines.append(item[1].strip())
    return lines


def load(
    path: Path, *, ocr: bool | None = None, cancel: CancelToken | None = None, on_page: Any = None
) -> LoadedDocument:
    name = display_name(path)
    if ocr is False or not ocr_available():
        raise BadDocument(f"{name} is an image; to read its text, {INSTALL_HINT}.", code="needs_ocr")
    import numpy as np
    from PIL import Image, ImageSequence, UnidentifiedImageError

    pages: list[Page] = []
    try:
        with Image.open(path) as image:
            if image.width * image.height > MAX_PIXELS:
                raise BadDocument(
                    f"{name} is {image.width}×{image.height} pixels, too large to read.", code="too_large"
                )
            frames = getattr(image, "n_frames", 1)
            total = min(frames, MAX_FRAMES)
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                if number > total:
                    break
                if cancel is not None:
                    cancel.raise_if_cancelled()
                text = ocr_array(np.asarray(frame.convert("RGB")))
                pages.append(Page(number=number, text=text))
                if on_page is not None:
                    on_page(number, total)
    except BadDocument:
        raise
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise BadDocument(f"{name} is not a readable image ({exc}).", code="corrupt") from exc
    if not any(p.text.strip() for p in pages):
        raise BadDocument(f"{name}: no text was found in the image.", code="empty")
    return LoadedDocument(
        doc_type="image",
        title=clean_title("", path),
        mime=MIME_BY_SUFFIX.get(path.suffix.lower(), "image/png"),
        pages=pages,
    )
