"""The GUI-free core: storage, ingestion, embeddings, retrieval, chat and evaluation.

Nothing under this package imports Qt; the CLI, the tests, the benchmarks and the GUI all drive it.
"""
