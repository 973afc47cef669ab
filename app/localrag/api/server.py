"""Running the application with uvicorn on 127.0.0.1 only (the one address this module ever binds)."""

from __future__ import annotations

import socket

import uvicorn
from starlette.types import ASGIApp

HOST = "127.0.0.1"
GRACE_S = 5  # open streams get this long to end when the server stops


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0: any free port). Raises ``OSError`` when it is taken."""
    # Named as TCP, so that asyncio turns Nagle's algorithm off on each connection (it checks the protocol):
    # otherwise a response's body waits for the client's delayed ACK of its headers, 40 ms on Linux.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def run(app: ASGIApp, sock: socket.socket) -> None:
    """Serve until Ctrl+C or SIGTERM; requests under way get ``GRACE_S`` to finish. Blocking."""
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=GRACE_S,
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn hands the signal on once it has stopped
        pass
    finally:
        sock.close()
