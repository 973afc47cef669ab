"""Server-sent events: one ``event:``/``data:`` block per message, and the response that streams them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse


def sse(event: str | None, data: Any) -> str:
    """One message; ``data`` as compact JSON (a string as it is), ``event`` omitted when ``None``."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return head + "".join(f"data: {line}\n" for line in payload.split("\n")) + "\n"


def sse_response(messages: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        messages,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
