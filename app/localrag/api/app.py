"""The ASGI application: its routes, the shared state they use (``ApiContext``), and errors as JSON."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from localrag.api import MAX_BODY_BYTES, documents, openai_chat
from localrag.api.answers import AnswerWorker, answer_json, sse_events
from localrag.api.body import (
    ApiError,
    doc_types,
    error_response,
    flag,
    optional_int,
    optional_text,
    read_json,
    text,
)
from localrag.api.guard import Guard
from localrag.api.indexing import Indexing
from localrag.api.sse import sse_response
from localrag.core.answer.answer_json import AnswerJson
from localrag.core.errors import KnownError, StoreBusy, describe
from localrag.core.retrieve import ERROR, MODES, retrieve

log = logging.getLogger("localrag.api")

MAX_TOKENS = 32_768
# Sent with a 503 when every pooled connection stayed in use (``StoreBusy``): when to try again, in seconds.
RETRY = {"Retry-After": "1"}


@dataclass
class ApiContext:
    """What the routes share: the open library, the language model's provider, the thread that answers,
    the background indexing and the folders allowed for this run."""

    library: Any
    provider: Any
    answers: AnswerWorker
    indexing: Indexing
    allowed: tuple[Path, ...] = ()  # folders given to ``serve --allow``, besides those of the settings


def create_app(ctx: ApiContext, *, token: str, token_file: str, max_body: int = MAX_BODY_BYTES) -> Starlette:
    app = Starlette(
        routes=[
            Route("/v1/status", status, methods=["GET"]),
            Route("/v1/search", search, methods=["POST"]),
            Route("/v1/ask", ask, methods=["POST"]),
            Route("/v1/documents", documents.add, methods=["POST"]),
            Route("/v1/documents", documents.listing, methods=["GET"]),
            Route("/v1/documents/{doc_id}", documents.one, methods=["GET"]),
            Route("/v1/documents/{doc_id}", documents.remove, methods=["DELETE"]),
            Route("/v1/chat/completions", openai_chat.completions, methods=["POST"]),
            Route("/v1/models", openai_chat.models, methods=["GET"]),
        ],
        middleware=[Middleware(Guard, token=token, token_file=token_file, max_body=max_body)],
        exception_handlers={
            ApiError: _api_error,
            HTTPException: _http_error,
            KnownError: _known_error,
            Exception: _bug,
        },
    )
    app.state.ctx = ctx
    return app


async def status(request: Request) -> JSONResponse:
    ctx: ApiContext = request.app.state.ctx
    state = ctx.provider.state
    return JSONResponse(
        {
            "model": {"status": state.status, "name": state.model, "error": state.error or None},
            "indexing": ctx.indexing.busy,
        }
    )


async def search(request: Request) -> JSONResponse:
    """What ``local-rag search --json`` prints; 503 (with the same object) when the store failed."""
    body = await read_json(request)
    query = text(body, "query")
    k = optional_int(body, "k", 1, 100)
    mode = optional_text(body, "mode", MODES)
    types = doc_types(body)
    path_glob = optional_text(body, "path")
    ctx: ApiContext = request.app.state.ctx
    collection = await run_in_threadpool(_collection_id, ctx.library, body, None)
    resp = await run_in_threadpool(
        retrieve,
        ctx.library,
        query,
        k=k,
        mode=mode,
        doc_types=types,
        path_glob=path_glob,
        collection=collection,
    )
    if resp.busy:
        return JSONResponse(resp.to_dict(), status_code=503, headers=RETRY)
    return JSONResponse(resp.to_dict(), status_code=503 if resp.reason == ERROR else 200)


async def ask(request: Request) -> Response:
    """What ``local-rag ask --json`` prints (503 with ``error`` when there is no answer), or with ``stream``
    the same as server-sent events (``answers.sse_events``)."""
    body = await read_json(request)
    question = text(body, "question")
    grounded, strict = flag(body, "grounded", True), flag(body, "strict", False)
    chat_id = optional_int(body, "chat_id", 1, 2**62)
    options: dict[str, Any] = {
        "chat_id": chat_id,
        "grounded": grounded,
        "strict": strict,
        "doc_types": doc_types(body),
        "max_tokens": optional_int(body, "max_tokens", 1, MAX_TOKENS),
        "persist": bool(chat_id) or flag(body, "save", False),
    }
    ctx: ApiContext = request.app.state.ctx
    if chat_id is not None and not await run_in_threadpool(_chat_exists, ctx.library, chat_id):
        raise ApiError(404, f"There is no chat {chat_id}.")
    if grounded:
        options["collection_id"] = await run_in_threadpool(_collection_id, ctx.library, body, chat_id)
    record = AnswerJson(question, grounded=grounded, strict=strict)
    if flag(body, "stream", False):
        return sse_response(sse_events(ctx.answers, record, ctx.provider, question, **options))
    await answer_json(ctx.answers, record, question, **options)
    return JSONResponse(record.finish(ctx.provider), status_code=503 if record.failed else 200)


def _chat_exists(library: Any, chat_id: int) -> bool:
    from localrag.core.answer import history

    with library.pool.connection() as conn:
        return history.get_chat(conn, chat_id) is not None


def _collection_id(library: Any, body: dict[str, Any], chat_id: int | None) -> int | None:
    """The collection the body names (``collection``: a name or an id), else the chat's, else None."""
    from localrag.core.answer import history
    from localrag.core.store.collections import CollectionError

    value = body.get("collection")
    if value is None:
        if chat_id is None:
            return None
        with library.pool.connection() as conn:
            chat = history.get_chat(conn, chat_id)
        return chat.collection_id if chat is not None else None
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip():
        raise ApiError(422, "'collection' must be a collection's name or id.")
    try:
        return int(library.collection(value).id)
    except CollectionError as exc:
        raise ApiError(404, exc.message) from None


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return exc.response()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    messages = {404: f"No such endpoint: {request.url.path}", 405: f"{request.method} is not allowed here."}
    return error_response(exc.status_code, messages.get(exc.status_code, str(exc.detail)))


async def _known_error(request: Request, exc: Exception) -> Response:
    message, _known = describe(exc, request.url.path, log)
    response = error_response(503, message)
    if isinstance(exc, StoreBusy):  # every connection of the pool stayed in use: worth trying again soon
        response.headers.update(RETRY)
    return response


async def _bug(request: Request, exc: Exception) -> Response:
    message, known = describe(exc, request.url.path, log)
    return error_response(503 if known else 500, message)
