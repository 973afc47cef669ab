-- BM25 postings carry their chunk's length, and the primary key covers tf and length, so that scoring a term
-- reads only the index (an index-only scan) instead of visiting the postings' and the chunks' heap pages.

-- migrate:up
ALTER TABLE bm25_postings ADD COLUMN dl integer NOT NULL DEFAULT 0;
UPDATE bm25_postings p SET dl = c.lexeme_count FROM document_chunks c WHERE c.id = p.chunk_id;
ALTER TABLE bm25_postings DROP CONSTRAINT bm25_postings_pkey;
ALTER TABLE bm25_postings ADD CONSTRAINT bm25_postings_pkey PRIMARY KEY (term, chunk_id) INCLUDE (tf, dl);

-- migrate:down
ALTER TABLE bm25_postings DROP CONSTRAINT bm25_postings_pkey;
ALTER TABLE bm25_postings ADD CONSTRAINT bm25_postings_pkey PRIMARY KEY (term, chunk_id);
ALTER TABLE bm25_postings DROP COLUMN dl;
