"""Real services for tests and benchmarks: worker processes, and the Google Pub/Sub emulator
started on a free port.

The emulator is Google's (`gcloud beta emulators pubsub start`, a Java server); gcloud starts
it as a child, so it runs in its own process group and is stopped as a group.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bias_audit.worker.embedded_redis import free_port

ROOT = Path(__file__).resolve().parent.parent
# The child asks for SIGKILL when its parent dies (PR_SET_PDEATHSIG = 1, kept across exec), then
# becomes the worker: a test run killed from outside (a timeout) leaves no worker that later
# consumes from another run's redis-server on a reused port. Done in the child rather than with
# preexec_fn, which forks a Python child of a process whose gRPC threads abort after fork.
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys; "
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'bias_audit', 'worker'])"
)


def run_cli(
    *args: str, env: dict[str, str] | None = None, stdin: str | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess:
    """`bias-audit ARGS` run in this process through the script's own `main()` (its exit codes and
    one-line errors), with `env` on top of ours, `stdin` as its input and its output captured as
    text: a child process would spend a second importing what this one has loaded. The tests of
    the script as a process (its imports, signals, the quickstart) start one."""
    from bias_audit.worker.cli import main
    from bias_audit.worker.logging_setup import FASTSTREAM_LOGGER

    out, err = io.BytesIO(), io.BytesIO()
    streams = (
        io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", write_through=True),
    )
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_environ = dict(os.environ)
    root = logging.getLogger()
    saved_logging = (root.handlers[:], root.level, logging.getLogger(FASTSTREAM_LOGGER).level)
    code: int | str | None = 0
    try:
        os.environ.update(env or {})
        sys.stdin, sys.stdout, sys.stderr = streams
        with contextlib.chdir(cwd):
            main(list(args))
    except SystemExit as done:
        code = done.code
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.environ.clear()
        os.environ.update(saved_environ)
        # commands that log set the root logger up for their run (configure_logging)
        root.handlers[:], level, faststream_level = saved_logging
        root.setLevel(level)
        logging.getLogger(FASTSTREAM_LOGGER).setLevel(faststream_level)
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    return subprocess.CompletedProcess(
        ["bias-audit", *args], returncode, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8")
    )


def run_cli_process(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT, timeout_s: float = 300
) -> subprocess.CompletedProcess:
    """`bias-audit ARGS` in a child process (the installed package, as a user runs it), its
    output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "bias_audit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout_s,
        env={**os.environ, **(env or {})},
    )


def spawn_worker(env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """`bias-audit worker` in a child process that dies with this one; output to log_path.
    Records go to JSONL in DATA_DIR/records unless env names a store ("" for the default): the tests read those files
    (the embedded PostgreSQL default has tests of its own: test_quickstart, test_postgres_worker)."""
    if "BIAS_AUDIT_STORE_URL" not in env and "BIAS_AUDIT_DATA_DIR" in env:
        env = {**env, "BIAS_AUDIT_STORE_URL": env["BIAS_AUDIT_DATA_DIR"]}
    log = open(log_path, "ab")
    command = ["-c", _DIE_WITH_PARENT] if sys.platform.startswith("linux") else ["-m", "bias_audit", "worker"]
    return subprocess.Popen([sys.executable, *command], env={**os.environ, **env}, stdout=log, stderr=log, cwd=ROOT)


def spawn_serve(
    *args: str, env: dict[str, str], log_path: Path | None = None, timeout_s: float = 60.0
) -> tuple[subprocess.Popen, str]:
    """`bias-audit serve` on a free port with `args` and `env` on top of ours; (process, base URL)
    once /healthz answers. Output to log_path (else discarded)."""
    import httpx

    port = free_port()
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL
    process = subprocess.Popen(
        [sys.executable, "-m", "bias_audit", "serve", "--port", str(port), *args],
        env={**os.environ, **env},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"bias-audit serve did not start (exit {process.poll()}); see {log_path}")
        time.sleep(0.2)


class PubSubEmulator:
    def __init__(self, log_dir: Path) -> None:
        self.log_path = Path(log_dir) / "pubsub-emulator.log"
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self, timeout_s: float = 90.0) -> PubSubEmulator:
        gcloud = shutil.which("gcloud")
        if not gcloud:
            raise RuntimeError("gcloud is not installed (the Pub/Sub emulator comes with google-cloud-cli)")
        log = open(self.log_path, "ab")
        # Its own session, so the Java child is stopped with gcloud; no parent-death signal here:
        # it would reach gcloud only, not the Java server.
        self.process = subprocess.Popen(
            [gcloud, "beta", "emulators", "pubsub", "start", f"--host-port={self.host}", "--quiet"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Pub/Sub emulator exited; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"http://{self.host}/", timeout=1) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the Pub/Sub emulator did not answer within {timeout_s:.0f}s; see {self.log_path}")

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process = None
