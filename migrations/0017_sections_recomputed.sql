-- A document's sections are now taken one outline level down when its top level holds only two parts and the
-- level below more (ingest/sections.py, outline_level). The stored ones are dropped: each document's are
-- computed again the first time a whole-document question needs them (core/answer/overview.py).

-- migrate:up
DELETE FROM document_sections;

-- migrate:down
DELETE FROM document_sections;
