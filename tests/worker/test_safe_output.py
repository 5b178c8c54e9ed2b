"""What the CLI prints about events and URLs: terminal codes shown, never run; passwords never
shown; an unreachable broker or a bug is one line, not a traceback."""

from __future__ import annotations

import json
import subprocess

import pytest

from bias_audit.schemas.safe_text import one_line, redact, visible
from tests.services import run_cli

VISIBLE = [  # (text from an event, what a terminal is given)
    ("judge", "judge"),
    ("\x1b[2Jjudge", "\\x1b[2Jjudge"),
    ("\x1b]8;;http://evil.example\x07x\x1b]8;;\x07", "\\x1b]8;;http://evil.example\\x07x\\x1b]8;;\\x07"),
    ("a\x9bb", "a\\x9bb"),  # the one-byte CSI
    ("left\u202eright", "left\\u202eright"),  # a bidi override reorders what a reader sees
    ("tab\tand\nline", "tab\tand\nline"),  # visible() keeps layout; one_line() escapes it
    ("é ü 日本", "é ü 日本"),
]


@pytest.mark.parametrize("text, shown", VISIBLE)
def test_control_characters_are_shown_as_escapes(text, shown):
    assert visible(text) == shown


def test_one_line_escapes_newlines_and_tabs_too():
    assert one_line("a\tb\nc\x1b") == "a\\tb\\nc\\x1b"


REDACTED = [
    ("redis://user:PASSWORD@host:6379/0", "redis://user:***@host:6379/0"),
    ("rediss://:PASSWORD@host", "rediss://:***@host"),
    (
        "cannot reach redis://u:p@h:1 and postgresql://a:b@db/x",
        "cannot reach redis://u:***@h:1 and postgresql://a:***@db/x",
    ),
    ("redis://host:6379/0", "redis://host:6379/0"),
    ("user@example.com said x:y", "user@example.com said x:y"),
    (
        "postgresql://db/x?user=a&password=PASSWORD&sslmode=require",
        "postgresql://db/x?user=a&password=***&sslmode=require",
    ),
    ("host=db user=a password=PASSWORD dbname=x", "host=db user=a password=*** dbname=x"),
    ("host=db password='two words' dbname=x", "host=db password=*** dbname=x"),
    ("https://hook.example/tasks?Token=T0KEN&x=1", "https://hook.example/tasks?Token=***&x=1"),
    ("a compassword=ok is not a parameter", "a compassword=ok is not a parameter"),
]


@pytest.mark.parametrize("text, shown", REDACTED)
def test_credentials_are_redacted(text, shown):
    assert redact(text) == shown


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, stdin=stdin, env=env)


def test_audit_names_a_bad_line_with_its_terminal_codes_escaped():
    event = {
        "session_id": "s",
        "timestamp": "2026-11-20T10:00:00Z",
        "responses": [{"model": "a", "response": "x"}, {"model": "b", "response": "y"}],
        "reviews": [{"reviewer": "\x1b]8;;http://evil.example\x07judge", "scores": {"Response Q": 3}}],
    }
    done = run("audit", "-", stdin=json.dumps(event) + "\n")
    assert done.returncode == 2 and "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert done.stderr == (
        "line 1: review 0 (\\x1b]8;;http://evil.example\\x07judge): score for unknown label 'Response Q'\n"
    )


def test_the_live_report_from_an_unreachable_redis_hides_its_password():
    done = run("report", "--redis", "redis://ops:S3CRET@127.0.0.1:1/0")
    assert done.returncode != 0 and "S3CRET" not in done.stderr and "redis://ops:***@127.0.0.1:1/0" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_setup_against_an_unreachable_broker_is_one_line():
    done = run("setup", "--broker", "redis://127.0.0.1:1/0")
    assert done.returncode == 1 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: cannot reach redis://127.0.0.1:1/0")


@pytest.mark.parametrize("secret", [" " * 16, "a" * 32, "abababababababab"])
def test_a_hash_secret_that_is_no_secret_is_refused(secret):
    done = run("audit", "-", env={"BIAS_AUDIT_HASH_SECRET": secret})
    assert done.returncode == 2 and "BIAS_AUDIT_HASH_SECRET must have at least 8 different characters" in done.stderr
    assert secret.strip() == "" or secret not in done.stderr
