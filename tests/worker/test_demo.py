"""`bias-audit demo` end to end: a real embedded redis-server and worker, all three inputs."""

import subprocess
import sys
from pathlib import Path

import pytest

# `make demo` runs it too: the main run's
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def demo(folder: Path, columns: int) -> subprocess.CompletedProcess:
    """`bias-audit demo` as a user runs it, in a terminal `columns` wide."""
    done = subprocess.run(
        [sys.executable, "-m", "bias_audit", "demo"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": str(columns), "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # the worker stops its reads before it closes their connection: no fetch error, no traceback
    assert "Traceback" not in done.stderr and "fetch error" not in done.stderr, done.stderr[-2000:]
    return done


@pytest.mark.redis
def test_the_demo_finds_every_injected_bias_on_both_inputs(tmp_path):
    done = demo(tmp_path, 160)
    assert "120 council sessions" in done.stdout and "40 LLM responses" in done.stdout
    assert "900 judge verdicts" in done.stdout and "LLM judges (900 verdicts" in done.stdout
    assert "Single LLM responses (40 of 40 audited)" in done.stdout
    assert "raw queries: none" in done.stdout
    assert "every injected bias was found" in done.stdout


@pytest.mark.redis
def test_the_demo_on_an_80_column_terminal_shows_whole_names_and_no_log_lines(tmp_path):
    done = demo(tmp_path, 80)
    assert '"level":"warning"' not in done.stderr  # no alert log lines between the tables
    assert "mistral/large" in done.stdout and "google/gemini-1.5" in done.stdout and "…" not in done.stdout
