"""Settings: defaults, then ``settings.json`` in the data folder, then ``LOCALRAG_*`` environment
variables."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from localrag.core import paths

log = logging.getLogger("localrag.config")

# Environment names that differ from LOCALRAG_<FIELD>.
# The port of ``local-rag serve`` and of the window's API server (``--port`` chooses another).
API_PORT = 8765

_ENV_ALIASES = {"context_tokens": "LOCALRAG_RETRIEVAL_CONTEXT_TOKENS"}


@dataclass
class Settings:
    """Every user-tunable knob, with the defaults chosen by measurement (see docs/benchmarks.md)."""

    # Storage: empty means the embedded server in the data folder.
    database_url: str = ""
    # Copies of the original files in the database, so that every computer sharing a library can show a cited
    # page: "auto" (when the database is a server by URL), "always" or "never"; files up to this size.
    file_copies: str = "auto"
    file_copy_max_mb: int = 200
    # Models: empty means the bundled ones.
    embedding_model_dir: str = ""
    gguf_path: str = ""
    # The embedding model's threads; 0: as many, spinning or not, as other work leaves cores free
    # (core/embed/threads.py).
    embed_threads: int = 0
    # Chunking (word pieces of the embedding model's tokenizer).
    chunk_tokens: int = 200
    chunk_overlap: int = 32
    # A document that would make more chunks than this is refused (about 17 MB of English text at the default
    # chunk size; embedding it would take hours on a laptop), early when its size tells, else on reaching it.
    max_document_chunks: int = 20_000
    # Retrieval (tuned on the tuning half of a public retrieval benchmark; see docs/benchmarks.md).
    k: int = 8
    mode: str = "hybrid"
    floor: float = 0.25  # cosine similarity a vector-only candidate needs; BM25 matches always pass
    rrf_k: int = 10
    vector_weight: float = 1.0
    bm25_weight: float = 1.0
    retrieval_depth: int = 50  # candidates each leg brings to fusion
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    ef_search: int = 100
    # How much a chunk's best piece (a few of its sentences) counts beside the chunk's own vector; 0: none.
    # 0.5 was chosen over 0-2 by page hit@1 and @5 on the tuning questions of three sets (docs/benchmarks.md,
    # "How much the best piece counts"); it was 1.0.
    piece_weight: float = 0.5
    routing: bool = True  # a question naming documents of the library searches them first
    # The domain packs acting on the best passages' documents may put pages first (a report's balance sheet
    # for "quick ratio"); they act only on documents with evidence of their field (core/hooks.py).
    domain_packs: bool = True
    context_tokens: int = 1200
    # Generation.
    temperature: float = 0.2
    max_tokens: int = 512
    threads: int = 0  # 0: one per core
    n_ctx: int = 4096
    fast_llm_copy: bool = True  # convert the bundled GGUF once to the fastest type this CPU runs
    # Measure once (about 20 s at the first start on a machine) which weight type, attention kernel and batch
    # size run the bundled model fastest here (core/llm/tuning.py).
    llm_tuning: bool = True
    prepare_while_typing: bool = True  # a pause in typing lets the model read the question's prompt already
    # Answers: what leads — "auto" (the sources for a model under a billion parameters, else the model's
    # answer), "sources" or "model" — and whether a model rewords the quoted sources (its sentences are
    # checked). Off by default: on the answer benchmark the bundled model's checked rewording lowered
    # correct-and-cited answers from 0.62 to 0.53 (docs/benchmarks.md, "Answers").
    answer_lead: str = "auto"
    reword: bool = False
    # Folders whose files ``local-rag serve`` may index when a program asks (``POST /v1/documents``), besides
    # the watched folders; in the environment, ``LOCALRAG_API_FOLDERS`` separated by the system's path
    # separator (":" on Linux and macOS).
    api_folders: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        """Defaults, overlaid with the saved file (if any) and then the environment."""
        path = path or paths.settings_file()
        values: dict[str, object] = {}
        if path.exists():
            try:
                values = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable settings file %s: %s", path, exc)
        settings = cls()
        for f in fields(cls):
            if f.name in values:
                settings._set(f.name, values[f.name])
            env = os.environ.get(_ENV_ALIASES.get(f.name, f"LOCALRAG_{f.name.upper()}"))
            if env is not None:
                settings._set(f.name, env)
        return settings

    def save(self, path: Path | None = None) -> None:
        path = path or paths.settings_file()
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(dataclasses.asdict(self), indent=2), encoding="utf-8")
        tmp.replace(path)

    def _set(self, name: str, raw: object) -> None:
        kind = type(getattr(self, name))
        value: object
        try:
            if kind is list:
                value = _string_list(raw)
            elif kind is bool and isinstance(raw, str):
                value = raw.strip().lower() in ("1", "true", "yes", "on")
            else:
                value = kind(raw)
        except (TypeError, ValueError):
            log.warning("ignoring setting %s=%r: not a %s", name, raw, kind.__name__)
            return
        setattr(self, name, value)

    @property
    def thread_count(self) -> int:
        return self.threads or max(1, os.cpu_count() or 1)


def _string_list(raw: object) -> list[str]:
    """A list setting: a JSON list of strings, or one string of items separated by ``os.pathsep``."""
    if isinstance(raw, str):
        return [item for item in raw.split(os.pathsep) if item]
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return list(raw)
    raise TypeError("not a list of strings")
