"""The command line a person meets first: help, version, and usage errors as one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# pydantic itself is not listed: typer >= 0.29 coerces command-line values with it; our models
# (bias_audit.schemas) and settings (pydantic_settings) are.
HEAVY = (
    "numpy",
    "scipy",
    "pydantic_settings",
    "faststream",
    "google.cloud.pubsub_v1",
    "fastapi",
    "torch",
    "redis",
    "orjson",
    "msgspec",
    "bias_audit.analysis",
    "bias_audit.schemas.events",
    "bias_audit.schemas.results",
    "bias_audit.schemas.report",
    "bias_audit.worker.settings",
)

PROBE = """
import sys
from bias_audit.worker.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    code = done.code
heavy = sorted(name for name in {heavy!r} if name in sys.modules)
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80", **(env or {})},
        timeout=60,
    )


def heavy_imports(done: subprocess.CompletedProcess) -> list[str]:
    [line] = [line for line in done.stderr.splitlines() if line.startswith("HEAVY=")]
    return [name for name in line.removeprefix("HEAVY=").split(",") if name]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["-h"],
        ["--version"],
        [],
        ["worker", "--help"],
        ["report", "-h"],
        ["audit", "--help"],
        ["publish", "--help"],
        ["serve", "--help"],
        ["results", "--help"],
        ["report", "--format", "xml"],
        ["report", "--sessions", "many"],
        ["no-such-command"],
    ],
)
def test_help_version_and_argument_errors_import_nothing_heavy(args):
    done = run_cli(*args)
    assert done.returncode in (0, 2), done.stderr
    assert heavy_imports(done) == []


def test_flags_and_options_with_a_metavar_carry_no_type_tags():
    # a positional argument shows typer's type column (its design: fastapi/typer#1410)
    for command in ([], ["report"], ["audit"], ["worker"], ["demo"]):
        text = run_cli(*command, "--help").stdout
        options = text[text.index("Options") :] if "Options" in text else text
        for tag in ("<bool>", "<str>", "<int>", "<float>", "<path>", "<list[str]>"):
            assert tag not in options, (command, tag)


def test_short_help_and_version():
    assert run_cli("-h").stdout == run_cli("--help").stdout
    assert "Usage: bias-audit" in run_cli("-h").stdout
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == "bias-audit 0.1.0"


def test_a_usage_error_is_one_line_with_exit_2():
    done = run_cli("report", "--format", "xml")
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if not line.startswith("HEAVY=")]
    assert len(errors) == 1
    assert errors[0].startswith("error: ") and "'xml' is not one of" in errors[0]
    assert errors[0].endswith("(see `bias-audit report --help`)")


def test_a_command_error_is_one_line_even_when_long(tmp_path):
    missing = tmp_path / ("a-long-folder-name-" * 6) / "records.jsonl"
    done = run_cli("audit", str(missing))
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if not line.startswith("HEAVY=")]
    assert errors == [f"error: {missing}: no such file"]


def test_a_broken_broker_url_is_one_line_without_the_password_or_a_traceback():
    done = subprocess.run(
        [sys.executable, "-m", "bias_audit", "setup", "--broker", "redis://ops:S3CRET@127.0.0.1:99999"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "error: broken Redis URL 'redis://ops:***@127.0.0.1:99999': Port out of range 0-65535; "
        "use redis://HOST:PORT/DB\n"
    )
