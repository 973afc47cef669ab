"""A document's status, each name defined once (the ``documents.status`` column and ``IngestEvent.status``).

A document moves ``QUEUED → EXTRACTING → EMBEDDING → READY``, or ends ``FAILED`` or ``CANCELLED``. Events also
say ``SKIPPED`` (a file not queued: already indexed, unsupported) and ``REMOVED`` (a row deleted).
"""

from __future__ import annotations

QUEUED = "queued"
EXTRACTING = "extracting"
EMBEDDING = "embedding"
READY = "ready"
FAILED = "failed"
CANCELLED = "cancelled"
SKIPPED = "skipped"
REMOVED = "removed"

# Work to do: claimed by an ingestor, resumed after a restart.
UNFINISHED = (QUEUED, EXTRACTING, EMBEDDING)
# Versions that count: the same content is not queued again, and a newer one supersedes an older one.
LIVE = (*UNFINISHED, READY)
# Attempts that make way for the next attempt at the same file.
GAVE_UP = (FAILED, CANCELLED)
# Nothing more will happen to the file (the end of an event stream about it).
SETTLED = (READY, FAILED, CANCELLED, SKIPPED, REMOVED)
