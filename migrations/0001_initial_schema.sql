-- The first schema: documents, page-aware chunks, per-model embeddings, BM25 postings, chats and messages.

-- migrate:up
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE embedding_models (
    name        text PRIMARY KEY,
    dimension   integer NOT NULL CHECK (dimension > 0),
    settings    jsonb NOT NULL DEFAULT '{}'::jsonb,
    active      boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);
-- At most one active model.
CREATE UNIQUE INDEX embedding_models_one_active ON embedding_models (active) WHERE active;

CREATE TABLE documents (
    id              bigserial PRIMARY KEY,
    path            text NOT NULL,
    -- The exact file-system bytes of the path when they are not valid UTF-8 (path then shows them as U+FFFD).
    path_bytes      bytea,
    title           text NOT NULL,
    mime            text NOT NULL DEFAULT '',
    doc_type        text NOT NULL,
    sha256          text NOT NULL,
    bytes           bigint NOT NULL DEFAULT 0,
    pages           integer NOT NULL DEFAULT 0,
    pages_done      integer NOT NULL DEFAULT 0,
    chunks_total    integer NOT NULL DEFAULT 0,
    chunks_embedded integer NOT NULL DEFAULT 0,
    status          text NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'extracting', 'embedding', 'ready', 'failed', 'cancelled')),
    error_code      text,
    error           text,
    warnings        jsonb NOT NULL DEFAULT '[]'::jsonb,
    -- A re-index of a changed file is a new row that replaces this one when it is ready.
    replaces_id     bigint REFERENCES documents (id) ON DELETE SET NULL,
    source_mtime    double precision,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    indexed_at      timestamptz
);
CREATE UNIQUE INDEX documents_sha256_live ON documents (sha256) WHERE status NOT IN ('failed', 'cancelled');
CREATE INDEX documents_path ON documents (path);
CREATE INDEX documents_status ON documents (status);

CREATE TABLE document_chunks (
    id           bigserial PRIMARY KEY,
    doc_id       bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    chunk_index  integer NOT NULL,
    page_number  integer NOT NULL,
    heading_path text NOT NULL DEFAULT '',
    text         text NOT NULL,
    token_count  integer NOT NULL,
    char_start   integer NOT NULL,
    char_end     integer NOT NULL,
    text_hash    text NOT NULL,
    lexeme_count integer NOT NULL DEFAULT 0,
    UNIQUE (doc_id, chunk_index)
);
CREATE INDEX document_chunks_text_hash ON document_chunks (text_hash);

-- Vectors of any dimension; each model gets its own partial HNSW index over embedding::vector(dim)
-- with vector_cosine_ops, created when the model is registered (see core/store/models.py).
CREATE TABLE chunk_embeddings (
    chunk_id        bigint NOT NULL REFERENCES document_chunks (id) ON DELETE CASCADE,
    embedding_model text NOT NULL REFERENCES embedding_models (name) ON DELETE CASCADE,
    embedding       vector NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (chunk_id, embedding_model)
);
CREATE INDEX chunk_embeddings_model ON chunk_embeddings (embedding_model);

-- BM25: postings over to_tsvector('english') lexemes of chunks of ready documents, with the statistics
-- BM25 needs kept in step as documents become ready or are removed (see core/retrieve/bm25.py).
CREATE TABLE bm25_postings (
    term      text NOT NULL,
    chunk_id  bigint NOT NULL REFERENCES document_chunks (id) ON DELETE CASCADE,
    tf        integer NOT NULL,
    PRIMARY KEY (term, chunk_id)
);
CREATE INDEX bm25_postings_chunk ON bm25_postings (chunk_id);

CREATE TABLE bm25_terms (
    term text PRIMARY KEY,
    df   integer NOT NULL
);

CREATE TABLE bm25_stats (
    id        integer PRIMARY KEY CHECK (id = 1),
    n_chunks  bigint NOT NULL,
    total_len bigint NOT NULL
);
INSERT INTO bm25_stats VALUES (1, 0, 0);

CREATE TABLE watched_folders (
    id       bigserial PRIMARY KEY,
    path     text NOT NULL UNIQUE,
    added_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE chats (
    id         bigserial PRIMARY KEY,
    title      text NOT NULL DEFAULT 'New chat',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE messages (
    id         bigserial PRIMARY KEY,
    chat_id    bigint NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content    text NOT NULL,
    grounded   boolean NOT NULL DEFAULT false,
    strict     boolean NOT NULL DEFAULT false,
    chunk_ids  bigint[] NOT NULL DEFAULT '{}',
    sources    jsonb NOT NULL DEFAULT '[]'::jsonb,
    timings    jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_chat ON messages (chat_id, id);

-- migrate:down
DROP TABLE IF EXISTS messages;
DROP TABLE IF EXISTS chats;
DROP TABLE IF EXISTS watched_folders;
DROP TABLE IF EXISTS bm25_stats;
DROP TABLE IF EXISTS bm25_terms;
DROP TABLE IF EXISTS bm25_postings;
DROP TABLE IF EXISTS chunk_embeddings;
DROP TABLE IF EXISTS document_chunks;
DROP TABLE IF EXISTS documents;
DROP TABLE IF EXISTS embedding_models;
