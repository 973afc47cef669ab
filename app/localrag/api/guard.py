"""What every request passes before it reaches a route: a loopback ``Host``, the token, a body within the
limit. A plain ASGI middleware (it adds next to nothing to the search hot path)."""

from __future__ import annotations

import hmac
import logging

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from localrag.api.body import error_response

log = logging.getLogger("localrag.api")

# Names a client on this machine reaches 127.0.0.1 by. Any other Host is a page elsewhere that resolved its
# own name to this machine (DNS rebinding): refused even with a token.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})


def host_name(host: str) -> str:
    """``Host`` without its port (``[::1]:8000`` → ``[::1]``)."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0].lower()


class Guard:
    """Refuses a request with another ``Host`` (403), without the token (401) or with a ``Content-Length``
    over ``max_body`` (413); ``body.read_json`` also stops a longer body that did not say its length."""

    def __init__(self, app: ASGIApp, *, token: str, token_file: str, max_body: int) -> None:
        self.app = app
        self.token = token.encode()
        self.token_file = token_file
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        problem = self._refusal(headers)
        if problem is not None:
            status, message = problem
            response = error_response(status, message)
            if status == 401:
                response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if host_name(host) not in LOOPBACK_HOSTS:
            log.warning("refused a request for host %r", host)
            return 403, f"This API answers requests to 127.0.0.1 only, not to {host!r}."
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token):
            what = "wrong" if given else "missing"
            return 401, (
                f"The token is {what}: send 'Authorization: Bearer TOKEN' with the token kept in "
                f"{self.token_file}."
            )
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return 400, "Content-Length is not a number."
            if int(length) > self.max_body:
                return 413, f"The request body is larger than {self.max_body:,} bytes."
        return None
