"""Request bodies: read within the size limit, parsed as a JSON object, and each field checked, so that a bad
request gets a 4xx that says what is wrong.

Every body passes the same checks before a route reads a field (``read_json``): at most ``limit`` bytes
(413), valid JSON in UTF-8 (or UTF-16/32) without ``NaN`` or ``Infinity`` (400), an object nested at most
``MAX_DEPTH`` levels (400), and text that PostgreSQL and UTF-8 can hold: no NUL character and no lone
surrogate in any string, key or value, wherever it is (422, naming the field). Then each route checks its own
fields with the helpers below (422, naming the field and what it must be).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from localrag.api import MAX_BODY_BYTES
from localrag.core.ingest.loaders import SUPPORTED_SUFFIXES

MAX_DEPTH = 32  # levels of arrays and objects in a body; the deepest the API reads is 4
MAX_TEXT_CHARS = 10_000  # a query or a question; longer ones only cost time (the model reads a few thousand)
DOC_TYPES = tuple(sorted(set(SUPPORTED_SUFFIXES.values())))


class ApiError(Exception):
    """A request the API refuses: ``status`` and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def response(self) -> JSONResponse:
        return error_response(self.status, self.message)


def error_response(status: int, message: str) -> JSONResponse:
    # A message may quote what the client sent or an exception's text: anything UTF-8 cannot hold is escaped.
    return JSONResponse({"error": message.encode("utf-8", "backslashreplace").decode()}, status_code=status)


async def read_json(request: Request, limit: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """The body as a JSON object, checked as the module docstring says. A body over ``limit`` bytes is refused
    (413) as it arrives, whatever its ``Content-Length`` says."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"The request body is larger than {limit:,} bytes.")
        chunks.append(chunk)
    return parse_body(b"".join(chunks))


def parse_body(raw: bytes) -> dict[str, Any]:
    """``raw`` as a JSON object whose every string is valid text; ``ApiError`` (400 or 422) otherwise."""
    if not raw.strip():
        raise ApiError(400, "The request has no body: send a JSON object.")
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:  # deeper than the parser goes: far beyond MAX_DEPTH
        raise ApiError(400, f"The body is nested deeper than {MAX_DEPTH} levels.") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"The body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The body must be a JSON object.")
    check_tree(data)
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def check_tree(data: dict[str, Any]) -> None:
    """Walk ``data`` (without recursion): at most ``MAX_DEPTH`` levels, every string valid text."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ApiError(400, f"The body is nested deeper than {MAX_DEPTH} levels.")
        if isinstance(node, dict):
            for key, value in node.items():
                name = f"{where}.{key}" if where else key
                if not _is_text(key):
                    raise ApiError(422, f"A field name in {_field(where)} {_problem(key)}.")
                if isinstance(value, str):
                    if not _is_text(value):
                        raise ApiError(422, f"'{name}' {_problem(value)}.")
                elif isinstance(value, (dict, list)):
                    stack.append((value, name, depth + 1))
        else:
            for i, value in enumerate(node):
                name = f"{where}[{i}]"
                if isinstance(value, str):
                    if not _is_text(value):
                        raise ApiError(422, f"'{name}' {_problem(value)}.")
                elif isinstance(value, (dict, list)):
                    stack.append((value, name, depth + 1))


def _is_text(s: str) -> bool:
    if "\x00" in s:
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _problem(s: str) -> str:
    if "\x00" in s:
        return "contains a NUL character (\\u0000), which text cannot hold"
    return "contains a lone surrogate (\\ud800–\\udfff), which is not Unicode text"


def _field(where: str) -> str:
    return f"'{where}'" if where else "the body"


def text(body: dict[str, Any], name: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """A required, non-empty string field of at most ``max_chars`` characters."""
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ApiError(422, f"'{name}' is required: a non-empty string.")
    if len(value) > max_chars:
        raise ApiError(422, f"'{name}' is longer than {max_chars:,} characters.")
    return value


def optional_text(body: dict[str, Any], name: str, choices: Sequence[str] = ()) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or (choices and value not in choices):
        allowed = f"one of {', '.join(choices)}" if choices else "a string"
        raise ApiError(422, f"'{name}' must be {allowed}.")
    if len(value) > MAX_TEXT_CHARS:
        raise ApiError(422, f"'{name}' is longer than {MAX_TEXT_CHARS:,} characters.")
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
    """An optional list of non-empty strings (a single string is taken as a list of one)."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ApiError(422, f"'{name}' must be a list of strings.")
    return value


def doc_types(body: dict[str, Any], name: str = "doc_types") -> list[str] | None:
    """An optional list of document types (``pdf``, ``markdown``…; any case); an unknown one is a 422 that
    lists the known ones."""
    value = optional_texts(body, name)
    if value is None:
        return None
    unknown = [v for v in value if v.lower() not in DOC_TYPES]
    if unknown:
        raise ApiError(
            422, f"'{name}' has an unknown type {unknown[0]!r}: the types are {', '.join(DOC_TYPES)}."
        )
    return [v.lower() for v in value]
