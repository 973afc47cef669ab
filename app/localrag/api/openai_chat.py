"""``POST /v1/chat/completions`` and ``GET /v1/models``: the OpenAI chat API, answered from the library.

The last ``user`` message is the question; the earlier ``user`` and ``assistant`` messages are the
conversation it follows (a follow-up is searched with the question before it); ``system`` messages are
ignored (the library has its own instructions). The answer is what ``ask`` gives, its ``[n]`` citations
included, with the sources it cites listed under it (``Sources:`` then ``[n] title, p. N — path``), so that
any OpenAI client shows them; ``sources`` and ``citations`` are also given as fields of their own. With
``"stream": true`` the answer streams as ``chat.completion.chunk`` events and ends with ``data: [DONE]``.
``model``, ``temperature`` and the like are accepted and ignored: the library answers with its own model and
settings. When the documents do not seem to answer, the reply says so and lists the closest passages
(``basis`` ``not_found``, ``not_found`` true); ``"grounded": false`` asks the model alone, and its reply
starts with "From the model alone, not your documents:" (``basis`` ``model``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from localrag.api.body import MAX_TEXT_CHARS, ApiError, flag, optional_int, read_json
from localrag.api.sse import sse, sse_response
from localrag.core.answer.answer_text import AnswerText
from localrag.core.answer.citations import Source
from localrag.core.answer.delivery import EventSink, deliver
from localrag.core.answer.events import (
    MODEL_ALONE,
    MODEL_ALONE_LABEL,
    Checked,
    Done,
    EvidenceReady,
    Failed,
    Token,
)
from localrag.core.answer.prompts import Turn

MODEL_ID = "local-rag"


async def models(request: Request) -> JSONResponse:
    return JSONResponse(
        {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "local"}]}
    )


async def completions(request: Request) -> Response:
    body = await read_json(request)
    question, history = _conversation(body.get("messages"))
    max_tokens = optional_int(body, "max_completion_tokens", 1, 32_768) or optional_int(
        body, "max_tokens", 1, 32_768
    )
    ctx = request.app.state.ctx
    options: dict[str, Any] = {
        "history": history,
        "max_tokens": max_tokens,
        "persist": False,
        "grounded": flag(body, "grounded", True),
    }
    model = body.get("model")
    reply = _Reply(model if isinstance(model, str) and model else MODEL_ID, max_tokens)
    if flag(body, "stream", False):
        return sse_response(reply.chunks(ctx.answers.events(question, **options)))
    text = AnswerText()
    done: Done | None = None
    async for event in ctx.answers.events(question, **options):
        text.feed(event)
        if isinstance(event, Done):
            done = event
        elif isinstance(event, Failed):
            raise ApiError(503, event.message)
    if done is None:
        raise ApiError(503, "The answer stopped before it was complete.")
    return JSONResponse(reply.completion(done))


def _conversation(messages: Any) -> tuple[str, list[Turn]]:
    """The question (the last message, from the user) and the turns before it."""
    if not isinstance(messages, list) or not messages:
        raise ApiError(422, "'messages' is required: a list of {role, content} objects.")
    turns: list[Turn] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ApiError(422, f"messages[{i}] must be an object with a 'role' and a 'content'.")
        content = _content(m.get("content"), i)
        if m["role"] in ("user", "assistant"):
            turns.append(Turn(m["role"], content))
    if not turns or turns[-1].role != "user" or not turns[-1].content.strip():
        raise ApiError(422, "The last message must be the user's question.")
    if len(turns[-1].content) > MAX_TEXT_CHARS:
        raise ApiError(422, f"The question (the last message) is longer than {MAX_TEXT_CHARS:,} characters.")
    return turns[-1].content, turns[:-1]


def _content(content: Any, i: int) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [p.get("text") for p in content if p.get("type") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "".join(texts)
    raise ApiError(422, f"messages[{i}].content must be a string or a list of content parts.")


def sources_block(sources: list[Source]) -> str:
    """The sources as listed under the answer: those it cites or quotes (all of them when it cites none)."""
    listed = [s for s in sources if s.cited or s.quoted] or sources
    if not listed:
        return ""
    lines = [f"[{s.number}] {s.where()} — {s.path}" for s in listed]
    return "\n\nSources:\n" + "\n".join(lines)


class _Reply:
    """One completion's identity (id, time, model name) and its two shapes: whole, or in chunks."""

    def __init__(self, model: str, max_tokens: int | None) -> None:
        self.id = "chatcmpl-" + secrets.token_hex(12)
        self.created = int(time.time())
        self.model = model
        self.max_tokens = max_tokens

    def completion(self, done: Done) -> dict[str, Any]:
        label = f"{MODEL_ALONE_LABEL}\n\n" if done.basis == MODEL_ALONE else ""
        content = label + done.answer + sources_block(done.sources)
        return {
            **self._head("chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": self._finish_reason(done),
                }
            ],
            "usage": _usage(done),
            **_extras(done),
        }

    async def chunks(self, events: AsyncIterator[Any]) -> AsyncIterator[str]:
        sink = _Chunks(self)
        yield self._chunk({"role": "assistant", "content": ""})
        async for event in events:
            if out := deliver(event, sink):
                yield out
            if sink.failed:
                break
        yield sse(None, "[DONE]")

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse(None, {**self._head("chat.completion.chunk"), "choices": [choice], **extra})

    def _finish_reason(self, done: Done) -> str:
        """``length`` when the model stopped at the token limit it was given."""
        limit = self.max_tokens
        return "length" if limit and int(done.timings.get("tokens", 0) or 0) >= limit else "stop"

    def _head(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}


class _Chunks(EventSink[str]):
    """The engine's events as ``chat.completion.chunk`` events: the answer's text as it comes
    (``AnswerText``), the sources under it, and the last chunk with the usage and the sources as fields."""

    def __init__(self, reply: _Reply) -> None:
        self.reply = reply
        self.text = AnswerText()
        self.failed = False

    def _content(self, piece: str) -> str:
        return self.reply._chunk({"content": piece}) if piece else ""

    def on_evidence(self, event: EvidenceReady) -> str:
        return self._content(self.text.on_evidence(event))

    def on_checked(self, event: Checked) -> str:
        return self._content(self.text.on_checked(event))

    def on_token(self, event: Token) -> str:
        first = not self.text.sent
        piece = self.text.on_token(event)
        if piece and first and not self.text.lead:  # the model alone: said first
            piece = f"{MODEL_ALONE_LABEL}\n\n{piece}"
        return self._content(piece)

    def on_done(self, event: Done) -> str:
        last = self.reply._chunk({}, self.reply._finish_reason(event), usage=_usage(event), **_extras(event))
        return self._content(self.text.on_done(event) + sources_block(event.sources)) + last

    def on_failed(self, event: Failed) -> str:
        self.failed = True
        return sse(None, {"error": event.message})


def _usage(done: Done) -> dict[str, int]:
    prompt = int(done.timings.get("prompt_tokens", 0) or 0)
    completion = int(done.timings.get("tokens", 0) or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _extras(done: Done) -> dict[str, Any]:
    out = done.to_json()
    keys = ("sources", "citations", "notice", "basis", "not_found")
    return {k: out[k] for k in keys}
