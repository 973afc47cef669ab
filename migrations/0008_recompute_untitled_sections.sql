-- Documents whose sections were computed without any title (PDFs without an outline) get them again on first
-- use: chapters named in the text ("Chapter 3. The Root Filesystem") now make sections too.

-- migrate:up
DELETE FROM document_sections
WHERE doc_id IN (SELECT doc_id FROM document_sections GROUP BY doc_id HAVING bool_and(title = ''));

-- migrate:down
SELECT 1;
