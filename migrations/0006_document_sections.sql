-- A document's top-level sections (from its chunks' heading paths) with the page each starts on, the chunk it
-- starts with and its most central chunk (the one whose vector is nearest the mean of the section's vectors),
-- computed when the document becomes ready, so that "summarize X" or "what are the chapters of X" can be answered
-- from the document's structure (see core/answer/overview.py).

-- migrate:up
CREATE TABLE document_sections (
    doc_id           bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    ordinal          integer NOT NULL,
    title            text NOT NULL,
    page_number      integer NOT NULL,
    chunk_count      integer NOT NULL,
    first_chunk_id   bigint REFERENCES document_chunks (id) ON DELETE SET NULL,
    central_chunk_id bigint REFERENCES document_chunks (id) ON DELETE SET NULL,
    PRIMARY KEY (doc_id, ordinal)
);
-- Deleting a chunk sets these to NULL: without the indexes, every deleted chunk would scan the table.
CREATE INDEX document_sections_first_chunk ON document_sections (first_chunk_id);
CREATE INDEX document_sections_central_chunk ON document_sections (central_chunk_id);

-- migrate:down
DROP TABLE IF EXISTS document_sections;
