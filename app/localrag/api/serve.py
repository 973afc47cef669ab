"""``local-rag serve [--port N] [--allow DIR]...``: the HTTP API on 127.0.0.1 (``localrag.api``), headless,
until Ctrl+C. The command is registered with the others by the entry point (``localrag/__main__.py``), so the
command line and the API do not import each other."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from localrag.core.config import API_PORT
from localrag.core.errors import KnownError

# Pooled connections the API's handlers share (capped by the server: ``Library``).
API_CONNECTIONS = 24


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="an HTTP API on 127.0.0.1: search, ask, documents, OpenAI-compatible chat"
    )
    p.add_argument(
        "--port", type=int, default=API_PORT, help=f"the port (default {API_PORT}; 0: any free one)"
    )
    p.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder whose files programs may add (repeatable; for this run only, besides the watched "
        "folders and the settings' api_folders)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from localrag.api import folders, server, token
    from localrag.api.answers import AnswerWorker
    from localrag.api.app import ApiContext, create_app
    from localrag.api.indexing import Indexing
    from localrag.core import paths
    from localrag.core.answer.engine import ChatEngine
    from localrag.core.library import Library
    from localrag.core.llm.provider import LLMProvider
    from localrag.host import Host

    if not 0 <= args.port <= 65535:
        raise KnownError(f"--port {args.port} is not a port number (0 to 65535).")
    allowed = tuple(Path(d).absolute() for d in args.allow)
    for folder in allowed:
        if not folder.is_dir():
            raise KnownError(f"--allow {folder}: there is no such folder.")
    token_file = paths.api_token_file()
    secret = token.load_or_create(token_file)
    try:
        sock = server.bind(args.port)
    except OSError as exc:
        raise KnownError(f"Cannot listen on {server.HOST}:{args.port}: {exc.strerror or exc}.") from exc
    # Its handlers share one pool, as large as the server allows beside the window and other commands.
    library = Library(owner=False, connections=API_CONNECTIONS)
    try:
        library.open()
        provider = LLMProvider(library.settings)
        with Host(library, embedding=True) as host:
            answers = AnswerWorker(ChatEngine(library, provider), host)
            indexing = Indexing(library, host)
            try:
                indexing.start()
                answers.warm_up()
                ctx = ApiContext(library, provider, answers, indexing, allowed)
                app = create_app(ctx, token=secret, token_file=str(token_file))
                port = sock.getsockname()[1]
                print(f"Local RAG API on http://{server.HOST}:{port}/v1", flush=True)
                print(f"Token: in {token_file} (send it as 'Authorization: Bearer TOKEN')", flush=True)
                roots = folders.allowed_folders(library, allowed).roots
                if roots:
                    print(f"Documents may be added from: {', '.join(map(str, roots))}", flush=True)
                else:
                    print(
                        "No folder allows adding documents yet: allow one in Settings (Storage) or with "
                        "--allow DIR; watched folders are allowed too.",
                        flush=True,
                    )
                print("Ctrl+C stops it.", flush=True)
                server.run(app, sock)
            finally:
                answers.close()
                indexing.close()
    finally:
        sock.close()
        library.close()
    print("local-rag: the API stopped", file=sys.stderr)
    return 0
