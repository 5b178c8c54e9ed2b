"""The README's quickstart as a new user runs it: a worker on its embedded Redis, the shipped
example events published from another directory, their results listed, the report over the
records the worker wrote, with no paths or URLs typed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.services import spawn_worker

EXAMPLE = Path(__file__).resolve().parents[2] / "worker" / "samples" / "example_events.jsonl"
SESSIONS = EXAMPLE.parent / "council_sessions.jsonl"
VERDICTS = EXAMPLE.parent / "judge_verdicts.jsonl"


def cli(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bias_audit", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def shown_results(count: int, *, cwd: Path, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    """`bias-audit results` until it shows `count` results (or the time is up: the last answer)."""
    deadline = time.monotonic() + timeout
    while True:
        shown = cli("results", "--count", str(count + 100), cwd=cwd, env=env)
        if len(shown.stdout.splitlines()) >= count or time.monotonic() > deadline:
            return shown
        time.sleep(0.5)


def test_the_shipped_example_events_are_valid_and_each_gets_a_result(tmp_path):
    done = cli("audit", str(EXAMPLE), cwd=tmp_path, env={})
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    sources = [
        json.loads(line).get("session_id") or json.loads(line)["audit_id"] for line in EXAMPLE.read_text().splitlines()
    ]
    assert [r["audit_id"] for r in results] == sources
    assert {r["event_type"] for r in results} == {"bias.audit.completed"}
    assert {r["source"] for r in results} == {"council.session", "llm.response"}


@pytest.mark.redis
def test_worker_publish_results_report_with_embedded_defaults(tmp_path, monkeypatch):
    home, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    env = {
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "BIAS_AUDIT_DATA_DIR": str(home / ".bias-audit"),
        "BIAS_AUDIT_OPS_PORT": "-1",
        "BIAS_AUDIT_STORE_URL": "",
    }  # "": the default, an embedded PostgreSQL
    env_elsewhere = {"XDG_RUNTIME_DIR": env["XDG_RUNTIME_DIR"]}  # another shell, another folder
    for name in ("BIAS_AUDIT_BROKER_URL", "BIAS_AUDIT_REDIS_URL", "BIAS_AUDIT_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    worker = spawn_worker(env, tmp_path / "worker.log")
    try:
        pointer = tmp_path / "run" / "bias-audit" / "embedded-redis.url"
        deadline = time.monotonic() + 30
        while not pointer.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pointer.exists(), (tmp_path / "worker.log").read_text()
        published = cli("publish", str(EXAMPLE), cwd=elsewhere, env=env_elsewhere)
        assert published.returncode == 0, published.stderr
        assert "published 5 events" in published.stderr
        shown = shown_results(5, cwd=elsewhere, env=env_elsewhere)
        assert shown.returncode == 0, shown.stderr
        assert sorted(json.loads(line)["audit_id"] for line in shown.stdout.splitlines()) == sorted(
            [*(f"example-session-{i}" for i in (1, 2, 3)), "example-response-1", "example-response-2"]
        )
        empty = cli("results", "deadletters", cwd=elsewhere, env=env_elsewhere)
        assert empty.returncode == 0 and empty.stdout == ""
        # the shipped sessions with injected biases: enough for a report with findings
        biased = cli("publish", str(SESSIONS), cwd=elsewhere, env=env_elsewhere)
        assert biased.returncode == 0 and "published 120 events" in biased.stderr, biased.stderr
        assert len(shown_results(125, cwd=elsewhere, env=env_elsewhere).stdout.splitlines()) >= 125
        judged = cli("publish", str(VERDICTS), cwd=elsewhere, env=env_elsewhere)  # the judges' verdicts
        assert judged.returncode == 0 and "published 900 events" in judged.stderr, judged.stderr
        assert len(shown_results(1025, cwd=elsewhere, env=env_elsewhere).stdout.splitlines()) >= 1025
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    assert not pointer.exists()  # a stopped worker is not offered to later commands
    data = home / ".bias-audit"
    assert not list(data.rglob("*.jsonl"))  # the records went to the embedded PostgreSQL, not to files
    assert not (data / "postgres" / "postgres.url").exists()  # stopped with the worker, its last holder
    report = cli("report", "--format", "json", cwd=home, env={"BIAS_AUDIT_DATA_DIR": str(data)})
    assert report.returncode == 0, report.stderr
    acme, demo = json.loads(report.stdout)["tenants"]
    assert (acme["tenant_id"], acme["sessions"], demo["tenant_id"], demo["sessions"]) == ("acme", 3, "demo", 100)
    findings = cli("report", "--tenant", "demo", cwd=home, env={"BIAS_AUDIT_DATA_DIR": str(data), "COLUMNS": "200"})
    assert findings.returncode == 0, findings.stderr
    assert "HARSH:mistral/large" in findings.stdout and "SELF_PREFERENCE:openai/gpt-4o" in findings.stdout
    judges = cli("judges", "--tenant", "demo", "--format", "json", cwd=home, env={"BIAS_AUDIT_DATA_DIR": str(data)})
    assert judges.returncode == 0, judges.stderr
    flagged = {j["judge"]: j["flagged"] for j in json.loads(judges.stdout)["judges"]}
    assert flagged == {
        "judge-fair": [],
        "judge-first": ["first_position_rate", "preference_fairness"],
        "judge-long": ["length_preference"],
    }
    exported = cli("export", "--kind", "interactions", cwd=elsewhere, env={"BIAS_AUDIT_DATA_DIR": str(data)})
    assert exported.returncode == 0, exported.stderr
    assert sorted(json.loads(line)["audit_id"] for line in exported.stdout.splitlines()) == [
        "example-response-1",
        "example-response-2",
    ]
    parquet = cli(
        "export", "--format", "parquet", "-o", "audit-parquet", cwd=elsewhere, env={"BIAS_AUDIT_DATA_DIR": str(data)}
    )
    assert parquet.returncode == 0, parquet.stderr
    import pyarrow.parquet as pq

    table = pq.read_table(sorted((elsewhere / "audit-parquet").glob("day=*/*.parquet")))
    assert table.num_rows > 0 and parquet.stderr.startswith(f"exported {table.num_rows} records to ")


def test_report_with_no_records_yet_says_where_it_looked(tmp_path):
    done = cli("report", cwd=tmp_path, env={"BIAS_AUDIT_DATA_DIR": str(tmp_path / "data")})
    assert done.returncode == 2
    [line] = done.stderr.splitlines()  # one line: where it looked and what to pass instead
    assert line.startswith("error: no input") and str(tmp_path / "data" / "records") in line
    assert "--input" in line and "--redis" in line


@pytest.mark.redis
def test_without_a_runtime_folder_the_stopped_worker_leaves_no_pointer(tmp_path, monkeypatch):
    for name in ("XDG_RUNTIME_DIR", "BIAS_AUDIT_BROKER_URL", "BIAS_AUDIT_REDIS_URL", "BIAS_AUDIT_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the pointer goes to ~/.cache then
    env = {"BIAS_AUDIT_DATA_DIR": str(tmp_path / "data"), "BIAS_AUDIT_OPS_PORT": "-1", "BIAS_AUDIT_STORE_URL": ""}
    worker = spawn_worker(env, tmp_path / "worker.log")
    pointer = tmp_path / "home" / ".cache" / "bias-audit" / "embedded-redis.url"
    try:
        deadline = time.monotonic() + 60
        while "worker started" not in (tmp_path / "worker.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.2)  # the embedded Redis and PostgreSQL are up, the signal handlers set
        assert pointer.exists(), (tmp_path / "worker.log").read_text()
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
    assert not pointer.exists()  # the embedded PostgreSQL did not move where the pointer is looked for


@pytest.mark.redis
def test_a_worker_stopped_while_it_starts_stops_its_servers_and_exits_0(tmp_path):
    env = {
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "BIAS_AUDIT_DATA_DIR": str(tmp_path / "data"),
        "BIAS_AUDIT_OPS_PORT": "-1",
        "BIAS_AUDIT_STORE_URL": "",
        "BIAS_AUDIT_BROKER_URL": "",
    }
    worker = spawn_worker(env, tmp_path / "worker.log")
    pointer = tmp_path / "run" / "bias-audit" / "embedded-redis.url"
    deadline = time.monotonic() + 60
    while not pointer.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    worker.send_signal(signal.SIGTERM)  # the embedded Redis is up; PostgreSQL and the rest are starting
    assert worker.wait(timeout=60) == 0, (tmp_path / "worker.log").read_text()
    assert not pointer.exists() and not (tmp_path / "data" / "postgres" / "postgres.url").exists()
    assert "worker started" not in (tmp_path / "worker.log").read_text()  # it was stopped while starting


def test_the_readme_quickstart_writes_only_what_git_ignores_and_runs_again_as_written():
    """Its files (the worker's log, the Parquet folder) are ignored, so a re-run leaves the clone
    clean; a folder an export refuses to reuse is removed first in the same line."""
    root = EXAMPLE.parents[2]
    readme = (root / "README.md").read_text()
    block = readme.split("## Quickstart", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]
    targets = []
    for command in commands:
        for redirect in ("2>", " >", "-o "):
            if redirect in command:
                targets.append((command, command.split(redirect, 1)[1].split()[0]))
    assert {target for _, target in targets} >= {"worker.log", "audit-parquet"}
    for command, target in targets:
        ignored = subprocess.run(["git", "check-ignore", "-q", target], cwd=root)
        assert ignored.returncode == 0, f"{target} (from `{command}`) is not in .gitignore"
        if "--format parquet" in command:
            assert command.startswith(f"rm -rf {target} && "), command
    assert "bias-audit worker 2>" in block  # its log lines go to a file, not between the commands' output
