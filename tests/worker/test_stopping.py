"""A stop asked for while an embedded server starts waits for the start to finish, then unwinds
through the caller's finally (the server stopped, its pointer removed) and exits 0."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, signal
from bias_audit.worker.stopping import deferred_stop, stop_cleanly_while_starting
stop_cleanly_while_starting()
try:
    with deferred_stop():
        os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-start
        print("start finished", flush=True)  # the start is not cut short
    print("after the block", flush=True)  # never: the held stop proceeds here
finally:
    print("cleaned up", flush=True)
"""


def test_a_stop_during_a_start_waits_for_it_then_unwinds_through_finally_with_exit_0():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["start finished", "cleaned up"]


def test_without_a_stop_the_block_runs_through():
    script = SCRIPT.replace("os.kill(os.getpid(), signal.SIGTERM)", "pass")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.splitlines() == ["start finished", "after the block", "cleaned up"]
