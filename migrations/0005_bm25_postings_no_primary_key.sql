-- Searches read postings by term from bm25_postings_impact (best first, or all of them) and by chunk from
-- bm25_postings_chunk; the primary key (term, chunk_id) served neither any more, yet the planner would still
-- probe it once per term and chunk when completing scores, reading pages of a third large index. A chunk's
-- postings are written once, one per distinct lexeme of its text (core/retrieve/bm25.py), so they stay unique
-- without it; it was a quarter of a large library's database.

-- migrate:up
ALTER TABLE bm25_postings DROP CONSTRAINT bm25_postings_pkey;

-- migrate:down
ALTER TABLE bm25_postings ADD CONSTRAINT bm25_postings_pkey PRIMARY KEY (term, chunk_id) INCLUDE (tf, dl);
