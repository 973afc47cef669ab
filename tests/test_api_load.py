"""Many clients at once through a real ``local-rag serve`` (``bench load``): its database connections are
pooled and capped, so a crowd of searches and questions is answered, or told to come back later (503 with
``Retry-After``), never refused by the database ("too many clients"), and the server stays up."""

from __future__ import annotations

import pytest

from localrag.eval import bench_load


def test_500_searches_and_20_questions_at_once_are_answered_or_told_to_retry():
    report = bench_load.bench(searches=500, asks=20)
    assert report["failures"] == [], report["failures"][:5]
    assert report["too_many_clients"] == 0
    assert report["search"]["ok"] + report["search"]["retry"] == 500
    assert report["ask"]["ok"] + report["ask"]["retry"] == 20
    assert report["search"]["ok"] > 0 and report["ask"]["ok"] > 0  # not everything turned away
    assert report["alive_after"]


def test_a_busy_pool_answers_503_with_retry_after(library):
    """Fault injected: the API's library gets a pool of one connection, and the test holds it. A search then
    waits briefly for it, and answers 503 with ``Retry-After``; once it is given back, the same search
    answers."""
    from starlette.testclient import TestClient

    from localrag.api.app import ApiContext, create_app
    from localrag.core.config import Settings
    from localrag.core.errors import StoreBusy
    from localrag.core.library import Library

    guest = Library(Settings.load(), owner=False, connections=1)
    guest.open()
    try:
        guest.pool.wait_s = 0.3
        app = create_app(ApiContext(guest, None, None, None), token="t", token_file="api.token")  # type: ignore[arg-type]
        client = TestClient(app, base_url="http://127.0.0.1", headers={"Authorization": "Bearer t"})
        body = {"query": "glacier melt rates", "mode": "keyword"}
        with guest.pool.connection():
            with pytest.raises(StoreBusy, match="busy"), guest.pool.connection():
                pass
            refused = client.post("/v1/search", json=body)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        assert "busy" in refused.json()["error"]
        again = client.post("/v1/search", json=body)
        assert again.status_code == 200 and again.json()["reason"] is None
    finally:
        guest.close()
