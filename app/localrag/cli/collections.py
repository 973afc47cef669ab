"""``local-rag collections list | create NAME | rename NAME NEW | delete NAME | add NAME [DOC_ID…] [--folder
DIR] | remove NAME DOC_ID… | show NAME``.

A collection is a named set of documents (``core/store/collections.py``); ``search``, ``ask`` and ``eval``
take ``--collection NAME``. A name is matched whatever its case; ``#3`` names collection 3.
"""

from __future__ import annotations

import argparse

from localrag.core.library import Library


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("collections", help="list, make and change collections (named sets of documents)")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="every collection and how many documents it holds")
    actions.add_parser("create", help="make a collection").add_argument("name")
    rename = actions.add_parser("rename", help="rename a collection")
    rename.add_argument("name")
    rename.add_argument("new_name")
    actions.add_parser("delete", help="delete a collection (its documents stay)").add_argument("name")
    show = actions.add_parser("show", help="the documents of a collection")
    show.add_argument("name")
    add = actions.add_parser("add", help="put documents in a collection: by id, or those in a folder")
    add.add_argument("name")
    add.add_argument("doc_ids", nargs="*", type=int, metavar="DOC_ID")
    add.add_argument("--folder", help="every document of the library in this folder (and below)")
    remove = actions.add_parser("remove", help="take documents out of a collection (not out of the library)")
    remove.add_argument("name")
    remove.add_argument("doc_ids", nargs="+", type=int, metavar="DOC_ID")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    library = Library(owner=False)
    library.open()
    try:
        return _run(library, args)
    finally:
        library.close()


def _run(library: Library, args: argparse.Namespace) -> int:
    if args.action == "list":
        found = library.collections()
        for c in found:
            print(f"{c.id:>4}  {c.name}  ({c.documents} documents)")
        if not found:
            print("No collections yet: `local-rag collections create NAME`.")
    elif args.action == "create":
        c = library.create_collection(args.name)
        print(f"created collection {c.id} “{c.name}”")
    elif args.action == "rename":
        c = library.rename_collection(library.collection(args.name).id, args.new_name)
        print(f"renamed to “{c.name}”")
    elif args.action == "delete":
        c = library.collection(args.name)
        chats = library.delete_collection(c.id)
        print(f"deleted collection “{c.name}”")
        if chats:
            print(f"{len(chats)} chat(s) scoped to it now search all documents: {', '.join(map(str, chats))}")
    elif args.action == "show":
        from localrag.core.ingest.documents import get_document

        c = library.collection(args.name)
        ids = library.collection_documents(c.id)
        with library.connect() as conn:
            for doc_id in ids:
                d = get_document(conn, doc_id)
                if d is not None:
                    print(f"{d.id:>6}  {d.status:10}  {d.path}")
        print(f"“{c.name}”: {len(ids)} documents")
    elif args.action == "add":
        if not args.doc_ids and not args.folder:
            print("local-rag: name documents by id, or give --folder DIR")
            return 2
        c = library.collection(args.name)
        n = library.add_to_collection(c.id, args.doc_ids, paths=[args.folder] if args.folder else None)
        print(f"added {n} document(s) to “{c.name}”")
    elif args.action == "remove":
        c = library.collection(args.name)
        n = library.remove_from_collection(c.id, args.doc_ids)
        print(f"removed {n} document(s) from “{c.name}”")
    return 0
