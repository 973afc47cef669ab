"""Indexing: files become page-aware chunks, vectors and BM25 postings, in steps a crash can resume from."""
