"""docs/architecture.md is the map of the code: every module or folder it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "app" / "localrag"


def test_every_path_the_architecture_page_names_exists():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[\w.-]+/)+(?:[\w.-]+\.(?:py|md|sql|sh|toml))?)`", text))
    assert len(named) > 20
    missing = sorted(
        p for p in named if not any((base / p).exists() for base in (PACKAGE, ROOT, PACKAGE / "core"))
    )
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
