-- Each term's postings in the order of their share of the BM25 score (highest first), so that a query reads a
-- frequent term's best postings only instead of all of them (see core/retrieve/bm25.py). The expression is
-- BM25's term-frequency part with k1 = 1.2, b = 0.75 and an average length of 100 lexemes; the true score is
-- computed at query time from tf and dl, which the index carries.

-- migrate:up
CREATE INDEX bm25_postings_impact ON bm25_postings
    (term, (tf::float8 / (tf::float8 + 0.3 + 0.009 * dl::float8)) DESC) INCLUDE (chunk_id, tf, dl);

-- migrate:down
DROP INDEX bm25_postings_impact;
