"""Shared fixtures: one real embedded PostgreSQL and one real embedding model for the whole session.

Every test runs against real parts. ``LOCALRAG_HOME`` points at a temporary folder so a developer's own data
is never touched.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from fixtures_docs import empty_store

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
_HOME = Path(tempfile.mkdtemp(prefix="lrag-test-"))
os.environ["LOCALRAG_HOME"] = str(_HOME)
# Machine checks (AMX kernels) run afresh in every session.
os.environ["LOCALRAG_CACHE"] = str(_HOME / "cache")
# The first load measures only the default configuration of the model (tests/test_tuning.py measures more).
os.environ["LOCALRAG_TUNING_BUDGET_S"] = "0"
os.environ.pop("LOCALRAG_DATABASE_URL", None)
# Run as root (containers, CI), the store may run PostgreSQL as its own system account (core/store/server.py);
# packaging/setup.sh test says so too.
os.environ.setdefault("LOCALRAG_ALLOW_ROOT", "1")


@pytest.fixture(scope="session")
def home() -> Path:
    return _HOME


@pytest.fixture(scope="session")
def library(home):
    """The session's Library on the embedded server, migrated, with the bundled embedding model registered."""
    from localrag.core.config import Settings
    from localrag.core.library import Library

    lib = Library(Settings.load())
    lib.open()
    _ = lib.embedder
    yield lib
    lib.close()


@pytest.fixture(scope="session")
def embedder(library):
    return library.embedder


@pytest.fixture()
def clean_db(library):
    """An empty document store and chat history (the schema and registered models stay)."""
    empty_store(library, watched_folders=True)
    return library
