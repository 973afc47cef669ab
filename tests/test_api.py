"""``local-rag serve`` through a real HTTP client against a real server process on the session's data folder
(it attaches to the session's embedded PostgreSQL as a guest), with the real models: the token, bad requests,
loopback only, documents added by path, search and ask as the command line prints them, server-sent events,
the OpenAI client unchanged, and Ctrl+C."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import httpx
import openai
import psutil
import pytest

from api_server import ApiServer, sse_messages
from fixtures_docs import empty_store

DOCS = {
    "install.md": (
        "# Installing Local RAG\n\n## Windows\n\nOn Windows, download the installer LocalRAG-Setup.exe and "
        "double-click it. The installer puts a shortcut in the Start menu.\n"
    ),
    "backup.md": (
        "# Backups\n\nLocal RAG keeps its database in the data folder. To back up your library, quit the app "
        "and copy the whole data folder to another disk.\n"
    ),
}
INSTALL_Q = "How do I install Local RAG on Windows?"


@pytest.fixture(scope="module")
def api(library, home, tmp_path_factory):
    empty_store(library)
    temp = str(tmp_path_factory.getbasetemp())  # the tests' files: every tmp_path is under it
    server = ApiServer(home, tmp_path_factory.mktemp("serve"), "--allow", temp, LOCALRAG_N_CTX="2048")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def docs(api, tmp_path_factory):
    """The documents above, added through the API, once they are ready."""
    folder = tmp_path_factory.mktemp("apidocs")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    r = api.client.post("/v1/documents", json={"paths": [str(folder)]})
    assert r.status_code == 202, r.text
    assert sorted(f["status"] for f in r.json()["files"]) == ["queued", "queued"]
    deadline = time.monotonic() + 120
    while True:
        listing = api.client.get("/v1/documents").json()
        if [d["status"] for d in listing["documents"]] == ["ready", "ready"]:
            break
        assert time.monotonic() < deadline, listing
        time.sleep(0.1)
    return {d["title"]: d for d in listing["documents"]}


def test_the_token_is_private_and_required(api):
    mode = stat.S_IMODE((api.home / "api.token").stat().st_mode)
    assert mode == 0o600
    bare = httpx.post(f"{api.url}/v1/search", json={"query": "backup"})
    assert bare.status_code == 401 and "api.token" in bare.json()["error"]
    assert bare.headers["www-authenticate"] == "Bearer"
    wrong = httpx.get(f"{api.url}/v1/documents", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401 and "wrong" in wrong.json()["error"]
    basic = httpx.get(f"{api.url}/v1/documents", auth=("user", api.token))
    assert basic.status_code == 401


def test_bad_requests_get_a_4xx_that_says_why(api):
    post = api.client.post
    for body, status, words in (
        (b"{not json", 400, "not valid JSON"),
        (b"", 400, "no body"),
        (b"[1, 2]", 400, "JSON object"),
        (b"\xff\xfe", 400, "not valid JSON"),
        (b'{"k": 3}', 422, "'query' is required"),
        (b'{"query": "backup", "k": "many"}', 422, "'k' must be"),
        (b'{"query": "backup", "mode": "psychic"}', 422, "'mode' must be one of hybrid"),
        (b'{"query": "backup", "doc_types": [1]}', 422, "'doc_types'"),
        (b'{"query": "backup", "doc_types": ["exe"]}', 422, "the types are docx, html, image, markdown"),
    ):
        r = post("/v1/search", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == status and words in r.json()["error"], (body, r.text)
    assert post("/v1/ask", json={"question": " "}).status_code == 422
    assert post("/v1/ask", json={"question": "why?", "stream": "yes"}).status_code == 422
    assert post("/v1/chat/completions", json={"messages": []}).status_code == 422
    assistant_last = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    }
    r = post("/v1/chat/completions", json=assistant_last)
    assert r.status_code == 422 and "user's question" in r.json()["error"]
    r = api.client.get("/v1/no-such-thing")
    assert r.status_code == 404 and "/v1/no-such-thing" in r.json()["error"]
    r = api.client.get("/v1/search")
    assert r.status_code == 405 and "GET" in r.json()["error"]


def test_a_huge_body_is_refused(api):
    huge = json.dumps({"query": "x" * 2_000_000})
    r = api.client.post("/v1/search", content=huge, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "larger than" in r.json()["error"]

    def unannounced():  # sent chunked, without a Content-Length: stopped as it arrives
        for _ in range(40):
            yield b" " * 65_536

    r = api.client.post("/v1/search", content=unannounced())
    assert r.status_code == 413 and "larger than" in r.json()["error"]
    assert api.client.get("/v1/status").status_code == 200  # and the server goes on


def test_unknown_documents_and_paths_are_404(api, docs, tmp_path):
    for method in ("GET", "DELETE"):
        r = api.client.request(method, "/v1/documents/999999")
        assert r.status_code == 404 and "no document 999999" in r.json()["error"]
    assert api.client.get("/v1/documents/abc").status_code == 404
    missing = tmp_path / "nowhere.md"
    r = api.client.post("/v1/documents", json={"paths": [str(missing)]})
    assert r.status_code == 404 and str(missing) in r.json()["error"]
    r = api.client.post("/v1/documents", json={"paths": ["relative/notes.md"]})
    assert r.status_code == 422 and "not absolute" in r.json()["error"]
    r = api.client.post("/v1/ask", json={"question": "What is in chat 424242?", "chat_id": 424242})
    assert r.status_code == 404 and "no chat 424242" in r.json()["error"]


def test_it_listens_on_loopback_only(api):
    listening = [
        c.laddr
        for c in psutil.Process(api.proc.pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening
    r = api.client.get("/v1/status", headers={"Host": "attacker.example:80"})
    assert r.status_code == 403 and "127.0.0.1" in r.json()["error"]


def test_a_small_answer_is_not_held_back(api):
    """Responses go out at once (no Nagle), not after the client's delayed ACK (40 ms on Linux)."""
    times = []
    for _ in range(21):
        started = time.perf_counter()
        assert api.client.get("/v1/status").status_code == 200
        times.append(time.perf_counter() - started)
    assert sorted(times)[10] < 0.02, times


def test_documents_show_status_and_can_be_removed(api, docs, tmp_path):
    install = docs["Installing Local RAG"]
    assert install["progress"] == 1.0 and install["chunks_embedded"] == install["chunks_total"] > 0
    one = api.client.get(f"/v1/documents/{install['id']}").json()
    assert one["path"].endswith("install.md") and one["status"] == "ready"
    extra = tmp_path / "extra.txt"
    extra.write_text("A note about nothing much, written to be removed again.", encoding="utf-8")
    r = api.client.post("/v1/documents", json={"paths": [str(extra)]})
    doc_id = r.json()["files"][0]["doc_id"]
    assert api.client.delete(f"/v1/documents/{doc_id}").json() == {"removed": doc_id}
    assert api.client.get(f"/v1/documents/{doc_id}").status_code == 404
    again = api.client.post("/v1/documents", json={"paths": [install["path"]]}).json()["files"][0]
    assert again["status"] == "skipped"  # the same content is not indexed twice


def test_search_gives_what_the_command_line_prints(api, docs):
    r = api.client.post("/v1/search", json={"query": "back up the data folder", "k": 3})
    assert r.status_code == 200
    got = r.json()
    cli = subprocess.run(
        [sys.executable, "-m", "localrag", "search", "back up the data folder", "--k", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=dict(os.environ),
    )
    assert cli.returncode == 0, cli.stderr
    printed = json.loads(cli.stdout)
    assert got["results"][0]["path"].endswith("backup.md")
    got.pop("timings"), printed.pop("timings")
    assert got == printed


def test_search_and_ask_take_a_collection(api, docs, library):
    install = library.create_collection("Install docs")
    library.add_to_collection(
        install.id, [d["id"] for d in docs.values() if d["path"].endswith("install.md")]
    )
    r = api.client.post("/v1/search", json={"query": "back up the data folder", "collection": "install DOCS"})
    assert r.status_code == 200, r.text
    assert all(p["path"].endswith("install.md") for p in r.json()["results"])  # never backup.md
    r = api.client.post("/v1/search", json={"query": "back up the data folder", "collection": install.id})
    assert r.status_code == 200 and "backup.md" not in r.text
    for body in ({"query": "x y z", "collection": "Nope"}, {"question": "Why?", "collection": "Nope"}):
        r = api.client.post("/v1/search" if "query" in body else "/v1/ask", json=body)
        assert r.status_code == 404 and "no collection named “Nope”" in r.json()["error"]
    r = api.client.post("/v1/search", json={"query": "x y z", "collection": ["a"]})
    assert r.status_code == 422 and "'collection'" in r.json()["error"]


def test_ask_answers_with_evidence_and_streams_the_same(api, docs):
    r = api.client.post("/v1/ask", json={"question": INSTALL_Q})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["sources"][0]["path"].endswith("install.md") and answer["citations"]["cited"] == [1]
    assert answer["evidence"][0]["number"] == 1 and "LocalRAG-Setup.exe" in answer["answer"]
    assert {"retrieval_s", "evidence_at_s", "wall_s"} <= set(answer["timings"])
    assert answer["chat_id"] is None and "error" not in answer

    with api.client.stream("POST", "/v1/ask", json={"question": INSTALL_Q, "stream": True}) as s:
        assert s.headers["content-type"].startswith("text/event-stream")
        messages = list(sse_messages(s.iter_lines()))
    names = [name for name, _ in messages]
    assert names[0] == "evidence" and names[-3:] == ["sources", "timings", "done"], names
    evidence = messages[0][1]
    assert evidence["text"] == answer["answer"] and evidence["spans"][0]["path"].endswith("install.md")
    done = messages[-1][1]
    assert done["answer"] == answer["answer"] and done["sources"] == answer["sources"]
    assert messages[-3][1]["citations"] == {"cited": [1], "invalid": []}


def test_the_openai_client_works_unchanged(api, docs):
    client = openai.OpenAI(base_url=f"{api.url}/v1", api_key=api.token, max_retries=0)
    assert [m.id for m in client.models.list()] == ["local-rag"]
    question = [{"role": "user", "content": INSTALL_Q}]
    reply = client.chat.completions.create(model="local-rag", messages=question)
    content = reply.choices[0].message.content
    assert content is not None and "LocalRAG-Setup.exe" in content and "[1]" in content
    assert content.endswith("install.md") and "\n\nSources:\n[1] " in content
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.model_extra or {})["citations"]["cited"] == [1]

    stream = client.chat.completions.create(model="local-rag", messages=question, stream=True)
    pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    assert "".join(pieces) == content

    follow_up = [
        *question,
        {"role": "assistant", "content": content},
        {"role": "user", "content": "And on Linux?"},
    ]
    r = client.chat.completions.create(model="local-rag", messages=follow_up)
    assert [s["path"] for s in (r.model_extra or {})["sources"]][:1] == [docs["Installing Local RAG"]["path"]]
    alone = client.chat.completions.create(model="local-rag", messages=follow_up[-1:])
    assert (alone.model_extra or {})["not_found"] is True  # the earlier messages are what found the source

    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{api.url}/v1", api_key="wrong", max_retries=0).models.list()


def test_a_model_answer_streams_as_it_comes(api, docs):
    """Without the documents the model answers alone: tokens stream, and the OpenAI stream is that text."""
    with api.client.stream(
        "POST",
        "/v1/ask",
        json={"question": "Say hello.", "grounded": False, "max_tokens": 12, "stream": True},
    ) as s:
        messages = list(sse_messages(s.iter_lines()))
    tokens = [data["text"] for name, data in messages if name == "token"]
    done = messages[-1][1]
    assert tokens and done["answer"] == "".join(tokens).strip() and done["sources"] == []


def test_a_question_the_documents_do_not_answer_gets_that_answer_not_the_models(api, docs):
    """With the documents on, an off-topic question gets the not-found answer (200, ``not_found``), with no
    token from the model; asked with ``grounded`` false, the model answers alone and the reply says so from
    its first word."""
    from localrag.core.answer.events import MODEL_ALONE_LABEL

    question = "How many levels does a parking garage have?"
    r = api.client.post("/v1/ask", json={"question": question})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["not_found"] is True and answer["basis"] == "not_found" and answer["generated"] == []
    assert answer["answer"].startswith("Your documents do not seem to answer this")
    with api.client.stream("POST", "/v1/ask", json={"question": question, "stream": True}) as s:
        names = [name for name, _ in sse_messages(s.iter_lines())]
    assert "token" not in names and names[-1] == "done"

    client = openai.OpenAI(base_url=f"{api.url}/v1", api_key=api.token, max_retries=0)
    messages = [{"role": "user", "content": question}]
    reply = client.chat.completions.create(model="local-rag", messages=messages)
    assert (reply.choices[0].message.content or "").startswith("Your documents do not seem to answer this")
    assert (reply.model_extra or {})["not_found"] is True
    alone = client.chat.completions.create(
        model="local-rag", messages=messages, max_tokens=12, extra_body={"grounded": False}
    )
    content = alone.choices[0].message.content or ""
    assert content.startswith(MODEL_ALONE_LABEL + "\n\n") and content[len(MODEL_ALONE_LABEL) :].strip()
    assert (alone.model_extra or {})["basis"] == "model"
    stream = client.chat.completions.create(
        model="local-rag", messages=messages, max_tokens=12, extra_body={"grounded": False}, stream=True
    )
    pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    assert next(p for p in pieces if p).startswith(MODEL_ALONE_LABEL)


def test_ctrl_c_stops_it_cleanly(api):
    """Last in this module: the server stops at Ctrl+C, saying so, and frees its port."""
    started = time.monotonic()
    assert api.stop() == 0
    assert time.monotonic() - started < 15
    assert "the API stopped" in api.stderr_path.read_text()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{api.url}/v1/status")
