"""A stop asked for while an embedded server starts waits for the start to finish, then unwinds
through the caller's finally (the server stopped, its pointer removed) and exits 0; a stop that
lands inside a library's call of our code, which wraps it in an error of its own, is still a stop."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, signal
from bias_audit.worker.stopping import deferred_stop, stopping_cleanly_while_starting
with stopping_cleanly_while_starting():
    try:
        with deferred_stop():
            os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-start
            print("start finished", flush=True)  # the start is not cut short
        print("after the block", flush=True)  # never: the held stop proceeds here
    finally:
        print("cleaned up", flush=True)
"""

# pydantic calls a serializer (its own Path serializer is Python too) and wraps what it raises,
# SystemExit included, in a PydanticSerializationError
WRAPPED = """
import os, signal
from pathlib import Path
from pydantic import BaseModel, field_serializer
from bias_audit.worker.stopping import stopping_cleanly_while_starting

class Settings(BaseModel):
    data_dir: Path

    @field_serializer("data_dir")
    def stop_arrives_here(self, value):
        STOP
        return str(value)

with stopping_cleanly_while_starting():
    try:
        Settings(data_dir=Path("/tmp")).model_dump()
        print("dumped", flush=True)
    finally:
        print("cleaned up", flush=True)
"""


def run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)


def test_a_stop_during_a_start_waits_for_it_then_unwinds_through_finally_with_exit_0():
    done = run(SCRIPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["start finished", "cleaned up"]


def test_without_a_stop_the_block_runs_through():
    done = run(SCRIPT.replace("os.kill(os.getpid(), signal.SIGTERM)", "pass"))
    assert done.returncode == 0 and done.stdout.splitlines() == ["start finished", "after the block", "cleaned up"]


def test_a_stop_a_library_wrapped_in_its_own_error_is_still_a_stop_with_exit_0():
    done = run(WRAPPED.replace("STOP", "os.kill(os.getpid(), signal.SIGTERM)"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["cleaned up"] and done.stderr == ""


def test_an_error_with_no_stop_asked_is_the_error():
    done = run(WRAPPED.replace("STOP", "raise ValueError('not a stop')"))
    assert done.returncode == 1 and "not a stop" in done.stderr
    assert done.stdout.splitlines() == ["cleaned up"]
