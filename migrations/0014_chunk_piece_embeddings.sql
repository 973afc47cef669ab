-- A chunk's pieces: windows of a few consecutive sentences, each embedded beside the chunk's own vector
-- (core/ingest/pieces.py). The vector leg ranks a chunk by its own cosine and its best piece's. Each model gets a
-- partial HNSW index on this table when it is registered, as on chunk_embeddings. A library from before has no
-- pieces: its chunks rank by their own vectors until re-embedding writes them.

-- migrate:up
CREATE TABLE chunk_piece_embeddings (
    chunk_id        bigint NOT NULL REFERENCES document_chunks (id) ON DELETE CASCADE,
    embedding_model text NOT NULL REFERENCES embedding_models (name) ON DELETE CASCADE,
    piece           integer NOT NULL,
    embedding       vector NOT NULL,
    PRIMARY KEY (chunk_id, embedding_model, piece)
);

-- migrate:down
DROP TABLE chunk_piece_embeddings;
