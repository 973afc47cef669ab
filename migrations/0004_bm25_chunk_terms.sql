-- The postings of one chunk, with their term, tf and length, in the index on chunk_id: completing the BM25 score
-- of a candidate chunk (core/retrieve/bm25.py, best-first search) then reads one index page instead of that page
-- and the postings' heap pages, and a large library's query touches far fewer pages.

-- migrate:up
CREATE INDEX bm25_postings_chunk_terms ON bm25_postings (chunk_id) INCLUDE (term, tf, dl);
DROP INDEX bm25_postings_chunk;
ALTER INDEX bm25_postings_chunk_terms RENAME TO bm25_postings_chunk;

-- migrate:down
CREATE INDEX bm25_postings_chunk_plain ON bm25_postings (chunk_id);
DROP INDEX bm25_postings_chunk;
ALTER INDEX bm25_postings_chunk_plain RENAME TO bm25_postings_chunk;
