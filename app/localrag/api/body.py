"""Request bodies: read within the size limit, parsed as a JSON object, and each field checked, so that a bad
request gets a 4xx that says what is wrong."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from localrag.api import MAX_BODY_BYTES


class ApiError(Exception):
    """A request the API refuses: ``status`` and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def response(self) -> JSONResponse:
        return error_response(self.status, self.message)


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def read_json(request: Request, limit: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """The body as a JSON object. A body over ``limit`` bytes is refused (413) as it arrives, whatever its
    ``Content-Length`` says; anything but a JSON object is a 400."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"The request body is larger than {limit:,} bytes.")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        raise ApiError(400, "The request has no body: send a JSON object.")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"The body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The body must be a JSON object.")
    return data


def text(body: dict[str, Any], name: str) -> str:
    """A required, non-empty string field."""
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ApiError(422, f"'{name}' is required: a non-empty string.")
    return value


def optional_text(body: dict[str, Any], name: str, choices: Sequence[str] = ()) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or (choices and value not in choices):
        allowed = f"one of {', '.join(choices)}" if choices else "a string"
        raise ApiError(422, f"'{name}' must be {allowed}.")
    return value


def optional_int(body: dict[str, Any], name: str, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(422, f"'{name}' must be a whole number from {low} to {high}.")
    return value


def flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise ApiError(422, f"'{name}' must be true or false.")
    return value


def optional_texts(body: dict[str, Any], name: str) -> list[str] | None:
    """An optional list of strings (a single string is taken as a list of one)."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ApiError(422, f"'{name}' must be a list of strings.")
    return value
