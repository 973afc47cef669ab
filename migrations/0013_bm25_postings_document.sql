-- Each posting carries its chunk's document, so that a search limited to some documents (a question that names
-- one) reads only their postings, and removing a document finds its postings without a join. The index serves
-- both: a document's postings of one term, with what scoring needs.

-- migrate:up
ALTER TABLE bm25_postings ADD COLUMN doc_id bigint;
UPDATE bm25_postings p SET doc_id = c.doc_id FROM document_chunks c WHERE c.id = p.chunk_id;
ALTER TABLE bm25_postings ALTER COLUMN doc_id SET NOT NULL;
CREATE INDEX bm25_postings_doc ON bm25_postings (doc_id, term) INCLUDE (chunk_id, tf, dl);

-- migrate:down
DROP INDEX bm25_postings_doc;
ALTER TABLE bm25_postings DROP COLUMN doc_id;
