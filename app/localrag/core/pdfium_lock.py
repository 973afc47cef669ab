"""pdfium is not thread-safe, even across different documents: every use of pypdfium2 holds this lock.

Ingestion extracts PDFs on its worker thread while the source viewer renders pages on another; both take it.
"""

import threading

PDFIUM_LOCK = threading.RLock()
