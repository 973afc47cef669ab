"""Any body at any endpoint of a real ``local-rag serve`` gets a 2xx or a 4xx that says why, never a 500,
and the server lives on: generated bodies (Hypothesis) of every shape (random JSON of any depth, random bytes,
nesting a hundred thousand levels deep, huge strings, wrong types, lone surrogates, NUL characters), and the
cases that once answered 500, each checked for its status and the field its message names.

``LOCALRAG_API_FUZZ_EXAMPLES`` sets how many generated requests the property test sends (300 by default; the
figure in docs/benchmarks.md, "API", is from a run of 10,000)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api_server import ApiServer, sse_messages
from fixtures_docs import empty_store

EXAMPLES = int(os.environ.get("LOCALRAG_API_FUZZ_EXAMPLES", "300"))
TALLY: Counter[str] = Counter()  # "METHOD path status" of every generated request


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzzdocs")
    (folder / "tea.md").write_text(
        "# Tea\n\nGreen tea is steeped at 80 degrees for two minutes. Black tea takes boiling water.\n",
        encoding="utf-8",
    )
    return folder


@pytest.fixture(scope="module")
def api(library, home, folder, tmp_path_factory):
    empty_store(library)
    server = ApiServer(home, tmp_path_factory.mktemp("serve"), "--allow", str(folder), LOCALRAG_N_CTX="2048")
    r = server.client.post("/v1/documents", json={"paths": [str(folder)]})
    assert r.status_code == 202, r.text
    server.wait_for_model()
    yield server
    server.stop()


def _sent(api: ApiServer, method: str, path: str, body: bytes) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    with api.client.stream(method, path, content=body, headers=headers) as r:
        r.read()
    return r


def _assert_sound(r: httpx.Response, what: str) -> None:
    """A 2xx or a 4xx with a JSON error; 503 only for an outage the server names, never for a bug."""
    status, text = r.status_code, r.text
    assert status < 500 or (status == 503 and "Internal error" not in text), (what, status, text[:500])
    if status >= 400:
        assert isinstance(r.json()["error"], str), (what, text[:500])
    elif r.headers.get("content-type", "").startswith("text/event-stream"):
        messages = list(sse_messages(iter(text.split("\n"))))
        last = messages[-1] if messages else None
        if what.split()[1] == "/v1/ask":  # a stream always ends as it should
            assert last is not None and last[0] == "done", (what, messages)
        else:
            assert last == ("", "[DONE]"), (what, messages)
    else:
        r.json()


# -- what is sent --------------------------------------------------------------------------------------------

ANY_CHAR = st.characters(exclude_categories=())  # lone surrogates and NUL included
ODD_TEXTS = st.sampled_from(
    ["\ud800", "\udfff", "a\udc80b", "\x00", "a\x00b", "", " ", "\U0001f600", "\u2028"]
)
TEXTS = st.one_of(st.text(ANY_CHAR, max_size=40), ODD_TEXTS)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXTS,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXTS, inner, max_size=4),
    max_leaves=20,
)


def _encode(value: Any, ascii_only: bool) -> bytes:
    """JSON text of ``value``; unescaped lone surrogates become the bytes UTF-8 forbids."""
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def huge_strings(draw: st.DrawFn) -> str:
    piece = draw(st.sampled_from(["x", "word ", "\u00e9", "\U0001f600", "\\", '"']))
    return piece * (draw(st.integers(min_value=10_000, max_value=1_100_000)) // len(piece))


@st.composite
def nested(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(min_value=1, max_value=300_000))
    opening, closing = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'{"query":[', b"]}")]))
    inner = draw(st.sampled_from([b"", b"1", b'"q"']))
    closed = draw(st.integers(min_value=0, max_value=depth))  # unbalanced too
    return opening * depth + inner + closing * closed


def _valid_bodies(folder: Path) -> dict[str, dict[str, Any]]:
    """A body each endpoint accepts, to change one field of (answers kept to a token or two)."""
    question = "How hot is the water for green tea?"
    return {
        "/v1/search": {
            "query": "green tea",
            "k": 3,
            "mode": "hybrid",
            "doc_types": ["markdown"],
            "path": "*",
        },
        "/v1/ask": {"question": question, "max_tokens": 2, "doc_types": ["markdown"], "stream": False},
        "/v1/documents": {"paths": [str(folder / "tea.md")]},
        "/v1/chat/completions": {
            "model": "local-rag",
            "max_tokens": 2,
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}],
        },
    }


POSTS = ("/v1/search", "/v1/ask", "/v1/documents", "/v1/chat/completions")
OTHERS = (
    ("GET", "/v1/status"),
    ("GET", "/v1/models"),
    ("GET", "/v1/documents"),
    ("GET", "/v1/documents/1"),
    ("DELETE", "/v1/documents/987654"),
    ("GET", "/v1/documents/%00"),
)


def _paths(folder: Path) -> st.SearchStrategy[str]:
    """Absolute paths inside the allowed folder, through ``..`` out of it, elsewhere, and odd ones."""
    inside = st.sampled_from([str(folder), str(folder / "tea.md"), str(folder / "missing.md")])
    tricks = st.sampled_from([f"{folder}/../", f"{folder}/./../../", "/", "/etc/", "/proc/self/", "//"])
    return st.one_of(inside, st.builds(lambda a, b: a + b, tricks | inside, TEXTS))


@st.composite
def requests(draw: st.DrawFn, folder: Path) -> tuple[str, str, bytes]:
    kind = draw(
        st.sampled_from(["json", "changed", "changed", "changed", "bytes", "nested", "huge", "other"])
    )
    path = draw(st.sampled_from(POSTS))
    if kind == "other":
        method, path = draw(st.sampled_from(OTHERS))
        return method, path, _encode(draw(VALUES), True)
    if kind == "json":  # any JSON at all
        body = _encode(draw(VALUES), draw(st.booleans()))
    elif kind == "bytes":
        body = draw(st.binary(max_size=200))
    elif kind == "nested":
        body = draw(nested())
    else:  # a valid body with one field changed, or one added: wrong type, odd text, huge text
        valid = _valid_bodies(folder)[path]
        fields = [f for f in valid if f != "max_tokens"]  # the model's answers stay a token or two long
        name = draw(st.one_of(st.sampled_from(fields), TEXTS))
        value = draw(huge_strings()) if kind == "huge" else draw(st.one_of(VALUES, ODD_TEXTS))
        if name == "messages" and draw(st.booleans()):  # inside the conversation
            value = [{"role": "user", "content": value}]
        elif name == "paths" and kind != "huge" and draw(st.booleans()):  # paths of every kind
            value = draw(st.lists(_paths(folder), min_size=1, max_size=3))
        body = _encode({**valid, name: value}, draw(st.booleans()))
    return "POST", path, body


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(data=st.data())
def test_no_body_gets_a_500(api, folder, data):
    method, path, body = data.draw(requests(folder))
    r = _sent(api, method, path, body)
    TALLY[f"{method} {path} {r.status_code}"] += 1
    _assert_sound(r, f"{method} {path} {body[:200]!r}")


def test_the_server_lives_on_and_answered_every_generated_request(api):
    """After the property test (it runs first): every request answered, none with a 500, the server alive."""
    total = sum(TALLY.values())
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(TALLY.items()))
    print(f"\n{total} generated requests: {summary}")
    assert total >= EXAMPLES and not [k for k in TALLY if k.endswith(" 500")], summary
    assert api.proc.poll() is None
    assert api.client.get("/v1/status").status_code == 200
    r = api.client.post("/v1/search", json={"query": "green tea water"})
    assert r.status_code == 200 and r.json()["results"][0]["path"].endswith("tea.md")


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/v1/search", b"[" * 100_000 + b"]" * 100_000, 400, "nested deeper than 32 levels"),
        ("/v1/search", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, 400, "nested deeper than 32 levels"),
        ("/v1/ask", b'{"question": "q", "x": ' + b"[" * 33 + b"]" * 33 + b"}", 400, "nested deeper"),
        ("/v1/search", b'{"query": "\\ud800"}', 422, "'query' contains a lone surrogate"),
        ("/v1/search", b'{"query": "a\\u0000b"}', 422, "'query' contains a NUL character"),
        ("/v1/search", b'{"query": "tea", "path": "\\u0000"}', 422, "'path' contains a NUL"),
        ("/v1/search", b'{"query": "tea", "doc_types": ["exe"]}', 422, "the types are docx, html, image"),
        ("/v1/search", b'{"query": "tea", "k": NaN}', 400, "NaN is not a JSON value"),
        ("/v1/search", b'{"query": "tea", "k": Infinity}', 400, "Infinity is not a JSON value"),
        ("/v1/search", b'{"query": "' + b"x" * 10_001 + b'"}', 422, "'query' is longer than 10,000"),
        ("/v1/search", b'{"query": "tea", "\\u0000": 1}', 422, "A field name in the body contains a NUL"),
        ("/v1/ask", b'{"question": "\\ud800", "save": true}', 422, "'question' contains a lone surrogate"),
        ("/v1/ask", b'{"question": "a\\u0000b"}', 422, "'question' contains a NUL"),
        ("/v1/ask", b'{"question": "tea?", "doc_types": "exe"}', 422, "unknown type 'exe'"),
        ("/v1/ask", b'{"question": "\\udfff", "stream": true}', 422, "'question' contains a lone surrogate"),
        ("/v1/documents", b'{"paths": ["/etc/\\u0000"]}', 422, "'paths[0]' contains a NUL"),
        ("/v1/documents", b'{"paths": ["/etc/\\ud800"]}', 422, "'paths[0]' contains a lone surrogate"),
        (
            "/v1/chat/completions",
            b'{"messages": [{"role": "user", "content": "hi"}], "model": "\\ud800"}',
            422,
            "'model' contains a lone surrogate",
        ),
        (
            "/v1/chat/completions",
            b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "\\ud800"}]}]}',
            422,
            "'messages[0].content[0].text' contains a lone surrogate",
        ),
        (
            "/v1/chat/completions",
            b'{"messages": [{"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}]}',
            422,
            "messages[0].content must be a string",
        ),
        ("/v1/search", b'{"query": "\xed\xa0\x80"}', 422, "lone surrogate"),  # as raw bytes (CESU-8)
    ],
)
def test_bodies_that_once_answered_500(api, path, body, status, words):
    r = _sent(api, "POST", path, body)
    assert r.status_code == status and words in r.json()["error"], r.text[:300]
