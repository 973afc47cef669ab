"""Shared fixtures: one real embedded PostgreSQL and one real embedding model for the whole session.

Every test runs against real parts. ``LOCALRAG_HOME`` points at a temporary folder so a developer's own data
is never touched.
"""

from __future__ import annotations

import atexit
import os
import signal
from pathlib import Path

import pytest

import fixtures_homes
from fixtures_docs import empty_store

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
_HOME, _HOME_LOCK = fixtures_homes.new_home()
os.environ["LOCALRAG_HOME"] = str(_HOME)
# Machine checks (AMX kernels) run afresh in every session.
os.environ["LOCALRAG_CACHE"] = str(_HOME / "cache")
# The first load measures only the default configuration of the model (tests/test_tuning.py measures more).
os.environ["LOCALRAG_TUNING_BUDGET_S"] = "0"
os.environ.pop("LOCALRAG_DATABASE_URL", None)
# Run as root (containers, CI), the store may run PostgreSQL as its own system account (core/store/server.py);
# packaging/setup.sh test says so too.
os.environ.setdefault("LOCALRAG_ALLOW_ROOT", "1")

# Servers of earlier sessions that were killed before they could stop theirs (tests/fixtures_homes.py).
fixtures_homes.sweep(_HOME)
# This session's server is stopped and its folder removed however it ends short of SIGKILL: at exit, and on
# SIGTERM or SIGHUP, which end the run like Ctrl-C does (the fixtures are torn down first).
atexit.register(fixtures_homes.remove_home, _HOME, _HOME_LOCK)
for _signal in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(_signal, signal.default_int_handler)


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
