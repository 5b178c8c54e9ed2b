"""`bias-audit serve` as a user meets it: it says where it listens and whether auth is on, a
browser's icon request is no 404, and SIGTERM stops it within seconds, saying so."""

from __future__ import annotations

import json
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


def _sessions_audited(metrics: str) -> float:
    for line in metrics.splitlines():
        if line.startswith("bias_audit_http_requests_total{") and 'endpoint="council.session"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_two_serve_processes_keep_one_window_and_count_a_repeated_session_once(tmp_path):
    from tests.builders import council_event

    log = tmp_path / "serve.log"
    server, url = spawn_serve(
        "--store", str(tmp_path / "records"), "--workers", "2", env={"BIAS_AUDIT_LOG_LEVEL": "INFO"}, log_path=log
    )
    scores = {"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}, "R3": {"M1": 6, "M2": 5}}

    def audit(number: int) -> httpx.Response:
        session = council_event(scores, session_id=f"s-{number}", timestamp=f"2026-11-20T10:{number:02d}:00Z")
        with httpx.Client(timeout=10) as client:  # a connection each: either process may take it
            return client.post(url + "/audit-session", json=session)

    try:
        answers = [audit(number) for number in range(24)]
        counted = [answer.json()["window"]["sessions"] for answer in answers]
        repeated = [audit(3) for _ in range(6)]  # a client's retries, to either process
        newer = audit(30)
        scraped = set()
        for _ in range(6):
            with httpx.Client(timeout=10) as client:  # whichever process takes the scrape
                scraped.add(_sessions_audited(client.get(url + "/metrics").text))
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
    said = log.read_text()
    assert code == 0 and "2 processes" in said and said.rstrip().endswith("stopped"), said[-2000:]
    answered_by = {
        line["pid"]
        for line in map(json.loads, (text for text in said.splitlines() if text.startswith("{")))
        if line.get("path") == "/audit-session"
    }
    assert len(answered_by) == 2  # both processes answered
    assert scraped == {24 + 6 + 1}  # every process's count, from either
    assert counted == list(range(1, 25))  # one window, whichever process answered
    for again in repeated:  # the first answer again, whichever process took the retry
        assert again.status_code == 200 and again.headers["Idempotent-Replay"] == "true", again.text
        assert again.json() == answers[3].json()
    assert newer.json()["window"]["sessions"] == 25  # the repeat counted once


def test_the_connections_serve_accepts_send_at_once_without_waiting_for_an_ack():
    import socket

    import uvicorn

    from bias_audit.worker.run import listening_socket
    from tests.services import free_port

    listening = listening_socket(uvicorn.Config("x:y", host="127.0.0.1", port=free_port()))
    listening.listen()  # as the server does when it starts
    try:
        with socket.create_connection(listening.getsockname()[:2], timeout=5):
            accepted, _ = listening.accept()
            with accepted:  # Nagle off, or each two-part response waits for a delayed ACK
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        listening.close()
