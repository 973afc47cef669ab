"""The foundation: the core stays Qt-free, the models load offline, the schema and its index behave."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest


def test_core_imports_no_qt():
    code = (
        "import sys, importlib, pkgutil, localrag.core as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'localrag.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "import localrag.cli\n"
        "bad = [m for m in sys.modules if m.startswith(('PySide6', 'PyQt'))]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_paraphrases_embed_closer_than_unrelated(embedder):
    vecs = embedder.embed(
        [
            "How do I install the program on Linux?",
            "What are the steps to set up the software on a Linux machine?",
            "The recipe needs two cups of flour and an egg.",
        ]
    )
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    para, unrelated = float(vecs[0] @ vecs[1]), float(vecs[0] @ vecs[2])
    assert para > 0.6 > unrelated + 0.3


def test_embedding_ignores_batch_padding(embedder):
    """A text embeds the same alone and next to a much longer one (mask-aware pooling, no fixed padding)."""
    short = "Cats sleep a lot."
    alone = embedder.embed([short])[0]
    # One padded batch (``embed`` itself keeps texts of very different lengths in separate batches).
    padded = embedder._run(embedder.tokenizer.encode_batch([short, "word " * 200]))[0]
    assert float(alone @ padded) > 0.9999
    # Texts of many lengths come back in their order, each as it embeds alone.
    texts = ["word " * n + "end." for n in (150, 3, 40, 7, 90, 1, 20)]
    together = embedder.embed(texts, batch_size=3)
    for text, vector in zip(texts, together, strict=True):
        assert float(embedder.embed([text])[0] @ vector) > 0.9999


def test_overlong_input_is_refused_not_truncated(embedder):
    with pytest.raises(ValueError, match="exceed"):
        embedder.embed(["token " * 400])
    assert embedder.count_tokens("token " * 400) > 256


def test_gguf_generates_tokens():
    from localrag.core.config import Settings
    from localrag.core.llm.llm import load_llm

    llm = load_llm(Settings(n_ctx=512))
    pieces = list(llm.stream_chat([{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0.0))
    assert pieces and "".join(pieces).strip()


def test_cosine_index_is_used(library, embedder):
    """With a realistic number of vectors, the planner answers a cosine top-k from the model's HNSW index."""
    from localrag.core.store.models import index_name

    q = embedder.embed(["query"])[0]
    with library.connect() as conn:
        doc = conn.execute(
            "INSERT INTO documents (path, title, doc_type, sha256, status) "
            "VALUES ('x', 'x', 'text', 'explain-test', 'ready') RETURNING id"
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO document_chunks (doc_id, chunk_index, page_number, text, token_count, char_start, "
            "char_end, text_hash) SELECT %s, i, 1, 't', 1, 0, 1, 'h' FROM generate_series(1, 3000) i",
            (doc,),
        )
        conn.execute(
            "INSERT INTO chunk_embeddings (chunk_id, embedding_model, embedding) "
            "SELECT c.id, %s, (SELECT array_agg(random() - 0.5)::vector FROM generate_series(1, 384) WHERE "
            "c.id > 0) FROM document_chunks c WHERE c.doc_id = %s",
            (embedder.name, doc),
        )
        conn.execute("ANALYZE chunk_embeddings")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT chunk_id FROM chunk_embeddings WHERE embedding_model = %s "
                "ORDER BY embedding::vector(384) <=> %s LIMIT 8",
                (embedder.name, q),
            )
        )
        conn.rollback()
    assert f"Index Scan using {index_name(embedder.name)}" in plan, plan


def test_migrations_up_down_up(tmp_path):
    """On an empty database: every migration applies, reverts, and applies again."""
    from localrag.core.store import db
    from localrag.core.store.migrate import Migrator
    from localrag.core.store.server import EmbeddedServer

    server = EmbeddedServer(tmp_path / "pg")
    conninfo = server.start()
    try:
        with db.connect(conninfo) as conn:
            m = Migrator(conn)
            assert len(m.migrate()) == len(m.migrations) >= 1
            tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname='public'")}
            assert {
                "documents",
                "document_chunks",
                "chunk_embeddings",
                "embedding_models",
                "chats",
                "messages",
            } <= tables
            assert len(m.rollback(len(m.migrations))) == len(m.migrations)
            left = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname='public'")}
            assert left == {"schema_migrations"}
            assert len(m.migrate()) == len(m.migrations)
            assert m.pending() == []
    finally:
        server.stop()
