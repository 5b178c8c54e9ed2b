"""`bias-audit serve` as a user meets it: it says where it listens and whether auth is on, a
browser's icon request is no 404, and SIGTERM stops it within seconds, saying so."""

from __future__ import annotations

import signal
import time

import httpx

from tests.services import spawn_serve


def test_serve_says_auth_is_off_answers_the_icon_and_stops_promptly_on_sigterm(tmp_path):
    log = tmp_path / "serve.log"
    server, url = spawn_serve(
        "--store", str(tmp_path / "records"), env={"BIAS_AUDIT_LOG_LEVEL": "WARNING"}, log_path=log
    )
    try:
        icon = httpx.get(url + "/favicon.ico", timeout=10)
        assert icon.status_code == 204
        keep_alive = httpx.Client(timeout=10)  # a browser's connection, left open
        assert keep_alive.get(url + "/docs").status_code == 200
    finally:
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
        took = time.monotonic() - started
    said = log.read_text()
    assert code == 0 and took < 8, (code, took)
    assert "auth off: requests to loopback names only" in said and f"on {url}" in said
    assert "stopping: answering the requests in flight" in said and said.rstrip().endswith("stopped")
    assert '"status":404' not in said
