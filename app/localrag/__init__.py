"""Local RAG: chat with your own documents, offline, with citations you can check."""

__version__ = "0.1.0"
