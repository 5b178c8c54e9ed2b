"""Every code block in docs/ is checked like code: the ones that run here run (the JSON lines
validate, the Python verifies a real signature, promtool checks the rules, DuckDB reads an
export); the ones that need what CI cannot reach (an OpenAI-compatible endpoint, judge files,
BigQuery) have each flag checked against the command's own --help. A block no check knows fails,
so a new one must say how it is tested."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shlex
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.worker.test_cli_docs import help_of, options_of

DOCS = Path(__file__).resolve().parents[2] / "docs"
ROOT = DOCS.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
BLOCK = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.S | re.M)
# blocks that are pictures or layouts, not something to run: (file, first words)
NOT_CODE = {
    ("architecture.md", "council.sessions"),  # the data-flow diagram
    ("judges.md", "AlpacaEval (a JSON"),  # the fields each judge format carries
    ("judges.md", "MT-Bench, single-answer"),
    ("judges.md", "The Language Model"),
    ("parquet.md", "DIR/day=2026-11-25/part-00000.parquet"),  # the folder layout
    ("single-responses.md", "llm.responses ->"),  # the data-flow diagram
}


def blocks() -> list[tuple[str, str, str]]:
    """(file, language, body) of every fenced block in docs/."""
    return [
        (path.name, lang, body) for path in sorted(DOCS.glob("*.md")) for lang, body in BLOCK.findall(path.read_text())
    ]


def commands(body: str) -> list[list[str]]:
    """The block's shell commands as words, continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [words for line in joined.splitlines() if (words := shlex.split(line, comments=True))]


def kind(name: str, lang: str, body: str) -> str:
    first = body.strip().split("\n")[0]
    if any(name == file and first.startswith(start) for file, start in NOT_CODE):
        return "not code"
    if lang == "json":
        return "replay prompts"
    if lang == "python":
        return "python"
    if "read_parquet(" in body:
        return "duckdb"
    if "FROM file(" in body:
        return "clickhouse"
    words = [w for command in commands(body) for w in command[:1]]
    if words and set(words) <= {"bias-audit", "export"}:
        return "bias-audit"
    if all("promtool" in line for line in body.strip().splitlines()):
        return "promtool"
    if words == ["bq"]:
        return "bq"
    return "unknown"


def test_every_block_has_a_check():
    unknown = [(name, body.strip()[:60]) for name, lang, body in blocks() if kind(name, lang, body) == "unknown"]
    assert unknown == []
    assert {kind(*b) for b in blocks()} >= {"bias-audit", "python", "duckdb", "promtool", "bq", "replay prompts"}


def test_every_bias_audit_command_names_a_command_and_options_it_has():
    problems = []
    for name, lang, body in blocks():
        if kind(name, lang, body) != "bias-audit":
            continue
        for words in commands(body):
            if words[0] != "bias-audit":
                continue
            command, options = words[1], options_of(words[1])
            problems += [
                f"{name}: {command} {w}" for w in words[2:] if w.startswith("--") and w.split("=")[0] not in options
            ]
    assert problems == []
    assert help_of("replay")  # the commands the blocks use answer their help


def test_the_replay_prompt_lines_are_what_replay_reads():
    from bias_audit.schemas.replay import ReplayPrompt

    lines = [body for name, lang, body in blocks() if kind(name, lang, body) == "replay prompts"]
    assert lines
    for block in lines:
        for line in block.strip().splitlines():
            ReplayPrompt.model_validate(json.loads(line))


def test_the_webhook_verifier_accepts_what_the_worker_signs_and_nothing_else():
    from bias_audit.producers.task_webhook import signature

    [(_, _, source)] = [b for b in blocks() if kind(*b) == "python"]
    namespace: dict = {"hmac": hmac, "hashlib": hashlib}
    exec(compile(textwrap.dedent(source), "docs/review-loop.md", "exec"), namespace)
    accept, secret, body, now = (
        namespace["accept"],
        b"a-webhook-secret-of-at-least-32-bytes-0123",
        b'{"a": 1}',
        time.time(),
    )
    header = signature(body, secret, int(now))
    assert accept(header, body, secret, now)
    assert not accept(header, body + b" ", secret, now)  # another body
    assert not accept(header, body, secret, now + 301)  # too old


def test_the_alert_rules_command_runs():
    [(_, _, body)] = [b for b in blocks() if kind(*b) == "promtool"]
    if shutil.which("promtool") is None:
        (pytest.fail if IN_CI else pytest.skip)("promtool is not installed (apt-get install prometheus)")
    done = subprocess.run(["bash", "-e", "-c", body], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_duckdb_query_reads_an_export_by_day(tmp_path, monkeypatch):
    import duckdb

    from bias_audit.storage.parquet_export import write_parquet
    from tests.storage.test_parquet_export import record

    rows = [
        record("s1", "2026-11-25T10:00:00Z"),
        record("s2", "2026-11-25T11:00:00Z"),
        record("s3", "2026-11-26T01:00:00Z"),
    ]
    write_parquet(rows, "records", tmp_path / "records")
    [(_, _, query)] = [b for b in blocks() if kind(*b) == "duckdb"]
    monkeypatch.chdir(tmp_path)
    counts = {str(day): n for day, n in duckdb.sql(query).fetchall()}
    assert counts == {"2026-11-25": 2, "2026-11-26": 1}
    [(_, _, clickhouse)] = [b for b in blocks() if kind(*b) == "clickhouse"]  # no ClickHouse here: the same files
    assert re.findall(r"'(records/[^']+)'", clickhouse) == re.findall(r"'(records/[^']+)'", query)


def test_the_bigquery_load_uses_flags_bq_has():
    [(_, _, body)] = [b for b in blocks() if kind(*b) == "bq"]
    if shutil.which("bq") is None:
        (pytest.fail if IN_CI else pytest.skip)("bq is not installed (it comes with google-cloud-cli)")
    words = commands(body)[0]
    listed = subprocess.run(["bq", "help", words[1]], capture_output=True, text=True, timeout=120).stdout
    flags = {w.split("=")[0] for w in words[2:] if w.startswith("--")}
    assert flags and all(f"{flag}:" in listed or f"{flag}=" in listed or f"{flag} " in listed for flag in flags), flags
