"""``local-rag db status | migrate | rollback [N]``."""

from __future__ import annotations

import argparse

from localrag.core.library import Library
from localrag.core.store.migrate import Migrator


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("db", help="show, apply or revert database migrations")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("status", help="list migrations and whether each is applied")
    actions.add_parser("migrate", help="apply pending migrations")
    rb = actions.add_parser("rollback", help="revert the newest N applied migrations")
    rb.add_argument("steps", nargs="?", type=int, default=1)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    library = Library(owner=False)
    library.open(migrate=False)
    try:
        with library.connect() as conn:
            migrator = Migrator(conn)
            if args.action == "migrate":
                ran = migrator.migrate()
                print(
                    f"applied {len(ran)} migration(s)" + "".join(f"\n  {m.version:04d}_{m.name}" for m in ran)
                )
            elif args.action == "rollback":
                undone = migrator.rollback(args.steps)
                print(
                    f"reverted {len(undone)} migration(s)"
                    + "".join(f"\n  {m.version:04d}_{m.name}" for m in undone)
                )
            else:
                for m, applied in migrator.status():
                    print(f"{'applied' if applied else 'pending':8} {m.version:04d}_{m.name}")
    finally:
        library.close()
    return 0
