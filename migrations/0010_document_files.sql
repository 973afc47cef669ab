-- The original files' bytes, kept in the database so that every computer sharing a library can show the cited
-- page: one copy per content (documents.sha256), in parts of at most 1 MiB so that a large file is streamed in
-- and out without being held in memory. A copy counts once ``document_files.complete`` is set.

-- migrate:up
CREATE TABLE document_files (
    sha256    text PRIMARY KEY,
    bytes     bigint NOT NULL,
    complete  boolean NOT NULL DEFAULT false,
    stored_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE document_file_parts (
    sha256 text NOT NULL REFERENCES document_files (sha256) ON DELETE CASCADE,
    part   integer NOT NULL,
    data   bytea NOT NULL,
    PRIMARY KEY (sha256, part)
);

-- migrate:down
DROP TABLE document_file_parts;
DROP TABLE document_files;
