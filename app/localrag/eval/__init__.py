"""Measurements: retrieval quality on BEIR folders (``beir``), ranking metrics (``metrics``) and benchmarks
(``bench_*`` modules, one per ``local-rag bench`` subcommand)."""
