"""``POST /v1/documents`` reads only the folders the person allowed, against a real ``local-rag serve`` on the
session's data folder: links and ``..`` resolved before the check, links to outside left out of a walked
folder, the same 403 for a path outside whether it exists or not, the data folder never read, and folders
allowed in the settings or watched taking effect on the running server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from api_server import ApiServer
from fixtures_docs import empty_store

SECRET = "Quartz zebras migrate across the frozen lake every winter solstice."


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> dict[str, Path]:
    """``allowed/`` (given to ``--allow``) with a note, a link to a file outside and a link to the folder
    outside; ``outside/`` with a secret."""
    root = tmp_path_factory.mktemp("folders")
    allowed, outside = root / "allowed", root / "outside"
    (allowed / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    (allowed / "sub" / "note.md").write_text(
        "# Kettles\n\nThe kettle boils water for tea.\n", encoding="utf-8"
    )
    (allowed / "secret-link.txt").symlink_to(outside / "secret.txt")
    (allowed / "elsewhere").symlink_to(outside, target_is_directory=True)
    (allowed / os.fsdecode(b"caf\xe9-link.txt")).symlink_to(outside / "secret.txt")  # not UTF-8
    return {"root": root, "allowed": allowed, "outside": outside}


@pytest.fixture(scope="module")
def api(library, home, tree, tmp_path_factory):
    empty_store(library, watched_folders=True)
    server = ApiServer(home, tmp_path_factory.mktemp("serve"), "--allow", str(tree["allowed"]))
    yield server
    server.stop()


def _post(api: ApiServer, *paths: str | Path) -> tuple[int, dict]:
    r = api.client.post("/v1/documents", json={"paths": [str(p) for p in paths]})
    return r.status_code, r.json()


def test_a_path_outside_gets_the_same_403_whether_it_exists_or_not(api, tree):
    allowed, outside = tree["allowed"], tree["outside"]
    answers = {
        "existing file": _post(api, outside / "secret.txt"),
        "missing file": _post(api, outside / "no-such-file.txt"),
        "existing folder": _post(api, outside),
        "missing folder": _post(api, outside / "no-such-folder"),
        "system file": _post(api, "/etc/passwd"),
        "..": _post(api, f"{allowed}/../outside/secret.txt"),
        "../..": _post(api, f"{allowed}/sub/../../outside/secret.txt"),
        "link to a file": _post(api, allowed / "secret-link.txt"),
        "link to a folder": _post(api, allowed / "elsewhere"),
        "through a linked folder": _post(api, allowed / "elsewhere" / "secret.txt"),
        "missing, through a linked folder": _post(api, allowed / "elsewhere" / "nothing.txt"),
    }
    first = answers["existing file"]
    assert first[0] == 403 and "outside the folders the API may read" in first[1]["error"]
    assert str(outside) not in first[1]["error"]
    assert all(answer == first for answer in answers.values()), answers
    # The second path is the one outside: nothing of the request is queued, and the error names it.
    status, body = _post(api, allowed / "sub" / "note.md", outside / "secret.txt")
    assert status == 403 and body["error"].startswith("paths[1] is outside")
    assert api.client.get("/v1/documents").json()["documents"] == []


def test_serve_says_which_folders_it_may_read(api, tree):
    printed = [api.lines.get(timeout=10).strip() for _ in range(3)]  # after the address: token, folders
    assert f"Documents may be added from: {tree['allowed']}" in printed, printed


def test_a_missing_path_inside_is_404_and_a_relative_one_422(api, tree):
    missing = tree["allowed"] / "missing.md"
    status, body = _post(api, missing)
    assert status == 404 and str(missing) in body["error"]
    assert _post(api, "sub/note.md")[0] == 422
    assert _post(api, "~/note.md")[0] == 422  # the server's user's home is not guessed


def test_an_allowed_folder_is_indexed_without_what_its_links_reach_outside(api, tree):
    status, body = _post(api, tree["allowed"])
    assert status == 202, body
    by_name = {Path(f["path"]).name: f for f in body["files"]}
    assert by_name["note.md"]["status"] == "queued"
    assert by_name["secret-link.txt"]["status"] == "skipped"
    assert "outside the folders" in by_name["secret-link.txt"]["message"]
    assert by_name["caf\ufffd-link.txt"]["status"] == "skipped"
    assert "secret.txt" not in by_name  # the linked folder is not walked
    deadline = time.monotonic() + 120
    while (docs := api.client.get("/v1/documents").json()["documents"]) and docs[0]["status"] != "ready":
        assert time.monotonic() < deadline, docs
        time.sleep(0.1)
    assert [Path(d["path"]) for d in docs] == [tree["allowed"] / "sub" / "note.md"]
    found = api.client.post("/v1/search", json={"query": "quartz zebras frozen lake"}).json()["results"]
    assert all("zebra" not in r["text"].lower() for r in found), found
    kettle = api.client.post("/v1/search", json={"query": "kettle boils water"}).json()["results"]
    assert kettle and kettle[0]["path"].endswith("note.md")


def test_folders_allowed_in_the_settings_or_watched_apply_to_the_running_server(api, library, home, tree):
    from localrag.core.config import Settings
    from localrag.core.ingest.watch import add_watched_folder, remove_watched_folder

    later = tree["root"] / "later"
    later.mkdir()
    (later / "plan.txt").write_text("The plan is to paint the shed green in spring.", encoding="utf-8")
    settings_file = home / "settings.json"
    saved = settings_file.read_bytes() if settings_file.exists() else None
    assert _post(api, later / "plan.txt")[0] == 403
    try:
        settings = Settings.load()
        settings.api_folders = [str(later), str(home)]
        settings.save()
        assert json.loads(settings_file.read_text())["api_folders"] == [str(later), str(home)]
        status, body = _post(api, later / "plan.txt")
        assert status == 202 and body["files"][0]["status"] == "queued", body
        # The data folder (database, password, token) is never read, even inside an allowed folder.
        assert _post(api, home / "settings.json")[0] == 403
        assert _post(api, home / "api.token")[0] == 403
    finally:
        if saved is None:
            settings_file.unlink()
        else:
            settings_file.write_bytes(saved)
    assert _post(api, later / "plan.txt")[0] == 403

    watched = tree["root"] / "watched"
    watched.mkdir()
    (watched / "list.txt").write_text("Buy flour, eggs and a new whisk.", encoding="utf-8")
    assert _post(api, watched)[0] == 403
    with library.connect() as conn:
        add_watched_folder(conn, watched)
    try:
        status, body = _post(api, watched)
        assert status == 202 and [f["status"] for f in body["files"]] == ["queued"], body
    finally:
        with library.connect() as conn:
            remove_watched_folder(conn, watched)


def test_serve_refuses_to_allow_a_folder_that_is_not_there(tmp_path):
    missing = tmp_path / "not-here"
    run = subprocess.run(
        [sys.executable, "-m", "localrag", "serve", "--port", "0", "--allow", str(missing)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ),
    )
    assert run.returncode != 0 and f"--allow {missing}" in run.stderr, run.stderr


def test_api_folders_setting_from_the_file_and_the_environment(tmp_path, monkeypatch):
    from localrag.core.config import Settings

    monkeypatch.delenv("LOCALRAG_API_FOLDERS", raising=False)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"api_folders": ["/srv/papers", "/srv/notes"]}), encoding="utf-8")
    assert Settings.load(path).api_folders == ["/srv/papers", "/srv/notes"]
    monkeypatch.setenv("LOCALRAG_API_FOLDERS", f"/a{os.pathsep}/b c{os.pathsep}")
    assert Settings.load(path).api_folders == ["/a", "/b c"]
    monkeypatch.delenv("LOCALRAG_API_FOLDERS")
    path.write_text(json.dumps({"api_folders": [1, 2], "k": 3}), encoding="utf-8")
    wrong = Settings.load(path)
    assert wrong.api_folders == [] and wrong.k == 3  # a wrong value is ignored, the others still apply
    wrong.api_folders.append("/x")
    assert Settings().api_folders == []  # each Settings has its own list
