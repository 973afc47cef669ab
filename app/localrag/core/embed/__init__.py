"""Sentence embeddings with onnxruntime: the bundled MiniLM or any ONNX sentence-embedding model folder."""
