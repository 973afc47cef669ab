-- The headings that begin inside a chunk: a JSON list of [offset in the chunk's text, heading path], so that a
-- sentence quoted from a chunk is named by the section it is in, not only by the one the chunk starts in.
-- NULL: none (or a chunk written before this column, named by its heading_path alone).

-- migrate:up
ALTER TABLE document_chunks ADD COLUMN headings jsonb;

-- migrate:down
ALTER TABLE document_chunks DROP COLUMN headings;
