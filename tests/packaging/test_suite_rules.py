"""The suite's own rules, checked: no test module takes the clock at import (a long suite outlives
what was "now" then), and no test reads the user's data folder (`.bias-audit`, which the README's
quickstart leaves in the repository)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.services import run_cli_process

TESTS = Path(__file__).resolve().parents[1]
CLOCKS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}


def clock_at_import(module: ast.Module) -> list[int]:
    """Lines of module-level statements (outside functions and classes) that call a clock."""
    found = []
    pending: list[ast.AST] = [
        s for s in module.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Lambda):  # runs when called, not at import
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLOCKS:
            found.append(node.lineno)
        pending.extend(ast.iter_child_nodes(node))
    return sorted(found)


def test_no_test_module_takes_the_clock_at_import():
    offenders = {
        str(path.relative_to(TESTS)): lines
        for path in sorted(TESTS.rglob("*.py"))
        if (lines := clock_at_import(ast.parse(path.read_text())))
    }
    assert offenders == {}, "take the time inside the test (a function), not at import"


def test_the_oracle_of_the_clock_rule_finds_a_clock_at_import():
    assert clock_at_import(ast.parse("from datetime import datetime\nNOW = datetime.now()\n")) == [2]
    assert clock_at_import(ast.parse("def now():\n    return datetime.now()\nLATER = lambda: time.time()\n")) == []


def test_a_cli_run_from_the_suite_never_reads_a_data_folder_in_its_working_directory(tmp_path):
    """A repository after the quickstart: `.bias-audit/records` holds a session. The suite's
    runs read their own data folder, so `report` with no input finds none (exit 2)."""
    records = tmp_path / ".bias-audit" / "records"
    records.mkdir(parents=True)
    row = {
        "schema_version": "1.2.0",
        "session_id": "s1",
        "timestamp": "2026-11-25T10:00:00Z",
        "tenant_id": "acme",
        "reviewer_id": "a",
        "model_id": "b",
        "score_value": 7.0,
        "score_scale": "1-10",
    }
    (records / "worker.jsonl").write_text(json.dumps(row) + "\n")
    assert os.environ["BIAS_AUDIT_DATA_DIR"] != str(tmp_path / ".bias-audit")
    run = run_cli_process("report", cwd=tmp_path, timeout_s=120)
    assert run.returncode == 2 and "no input" in run.stderr, run.stderr
    assert str(tmp_path) not in run.stderr


def test_a_test_that_hangs_fails_and_the_run_goes_on(tmp_path):
    """Commands run in the test's process (tests.services.run_cli) have no child to time out: the
    suite's timeout (pytest-timeout, pyproject.toml) fails a test that hangs, and the rest runs."""
    (tmp_path / "test_hang.py").write_text(
        "import time\n\ndef test_hangs():\n    time.sleep(60)\n\ndef test_after():\n    assert True\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "2", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stdout
    assert "Timeout (>2.0s)" in run.stdout and "1 failed, 1 passed" in run.stdout, run.stdout
