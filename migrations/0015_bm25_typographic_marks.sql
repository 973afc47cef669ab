-- Keywords read through typographic marks: PostgreSQL's text parser, in the C locale the store runs in, took
-- every character beyond ASCII for a letter, so a manual's ‘set’, "model’s", "2010–2015" and two words joined by
-- a no-break space were each one lexeme that no search for the word found. core/retrieve/bm25.py now reads those
-- marks as ASCII or spaces (MARKS) and drops soft hyphens and zero-width joiners (INVISIBLE); this writes every
-- posting again with that expression (INDEXED_TEXT as it is in this version: tests/test_bm25.py checks it), and
-- the statistics from the new postings.

-- migrate:up
CREATE TEMP TABLE bm25_docs ON COMMIT DROP AS SELECT DISTINCT doc_id FROM bm25_postings;
CREATE TEMP TABLE bm25_new ON COMMIT DROP AS
SELECT l.lexeme AS term, c.id AS chunk_id, c.doc_id, coalesce(array_length(l.positions, 1), 1) AS tf
FROM document_chunks c, unnest(
to_tsvector('english', replace(replace(replace(replace(replace(translate(CASE WHEN c.context = '' THEN c.heading_path ELSE c.context END || ' ' || c.text, '‘’‚‛′‹›“”„‟″«»‐‑‒–—―−…•‣⁃·▪◦→←⇒×          ​  　­‌‍⁠﻿', '''''''''''''''"""""""--                              '), 'ﬀ', 'ff'), 'ﬁ', 'fi'), 'ﬂ', 'fl'), 'ﬃ', 'ffi'), 'ﬄ', 'ffl'))
) l
WHERE c.doc_id IN (SELECT doc_id FROM bm25_docs);
DELETE FROM bm25_postings;
UPDATE document_chunks c SET lexeme_count = 0
WHERE c.doc_id IN (SELECT doc_id FROM bm25_docs) AND c.lexeme_count <> 0;
UPDATE document_chunks c SET lexeme_count = s.len
FROM (SELECT chunk_id, sum(tf) AS len FROM bm25_new GROUP BY chunk_id) s WHERE c.id = s.chunk_id;
INSERT INTO bm25_postings (term, chunk_id, doc_id, tf, dl)
SELECT term, chunk_id, doc_id, tf, sum(tf) OVER (PARTITION BY chunk_id) FROM bm25_new;
DELETE FROM bm25_terms;
INSERT INTO bm25_terms (term, df) SELECT term, count(*) FROM bm25_postings GROUP BY term;
UPDATE bm25_stats SET n_chunks = s.n, total_len = s.len
FROM (SELECT count(DISTINCT chunk_id) AS n, coalesce(sum(tf), 0) AS len FROM bm25_postings) s WHERE id = 1;
DROP TABLE bm25_new;
DROP TABLE bm25_docs;

-- migrate:down
-- The postings stay as written; nothing to undo in the schema.
SELECT 1;
