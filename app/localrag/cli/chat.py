"""``local-rag chat list`` and ``local-rag chat export ID [--format md|html|pdf] [-o FILE]``.

``export`` writes a chat with its sources (``core/answer/export.py``): Markdown, one self-contained HTML file,
or a PDF printed by Qt (this needs the Qt GUI libraries; it draws off screen, no display is needed). Without
``-o`` Markdown and HTML go to standard output, and a PDF to a file named after the chat.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from localrag.core.answer import export, history
from localrag.core.library import Library


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chat", help="list the saved chats, or export one with its sources")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="the saved chats, the most recent first, with their scope")
    ex = actions.add_parser("export", help="write a chat with its quoted sources, pages and links")
    ex.add_argument("chat_id", type=int, metavar="ID", help="the chat (see `local-rag chat list`)")
    ex.add_argument("--format", choices=export.FORMATS, default="md", help="md (default), html or pdf")
    ex.add_argument("-o", "--output", type=Path, metavar="FILE", help="where to write it")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    library = Library(owner=False)
    library.open()
    try:
        with library.connect() as conn:
            if args.action == "list":
                for chat in history.list_chats(conn):
                    scope = f"collection “{chat.collection_name}”" if chat.collection_id else "all documents"
                    print(f"{chat.id:>5}  {chat.updated_at:%Y-%m-%d %H:%M}  {chat.title}  ({scope})")
                return 0
            chat, text = export.export_chat(conn, args.chat_id, args.format)
    finally:
        library.close()
    if args.format == "pdf":
        from localrag.printing import gui_application, html_to_pdf

        out = args.output or Path(export.file_name(chat.title, "pdf", chat.id))
        gui_application()
        html_to_pdf(text, out, title=chat.title)
        print(f"wrote {out}", file=sys.stderr)
    elif args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
