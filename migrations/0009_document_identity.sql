-- Document identity: what a document is (organisation, kind, period, found at ingest or edited by a person) in
-- documents.meta, and the context each chunk is searched with (its document's line and its heading path or page
-- head) in document_chunks.context. BM25 indexes the context with the text and the vector is embedded from both;
-- chunk_embeddings.context_hash is md5 of the context a vector was embedded with, so a vector whose chunk's
-- context changed (metadata edited, or a library from before this migration: NULL) is re-embedded by
-- `local-rag reembed` (the app offers it) while the old vector keeps answering until then.

-- migrate:up
ALTER TABLE documents ADD COLUMN meta jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE document_chunks ADD COLUMN context text NOT NULL DEFAULT '';
ALTER TABLE chunk_embeddings ADD COLUMN context_hash text;

-- migrate:down
ALTER TABLE chunk_embeddings DROP COLUMN IF EXISTS context_hash;
ALTER TABLE document_chunks DROP COLUMN IF EXISTS context;
ALTER TABLE documents DROP COLUMN IF EXISTS meta;
