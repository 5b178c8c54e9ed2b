"""The one connection each of the worker's writers holds."""

from __future__ import annotations

import psycopg


class OneConnection:
    """A writer's one connection: made when first needed, dropped when it fails (the batch is
    retried on a new one)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._connection: psycopg.Connection | None = None

    def _connected(self) -> psycopg.Connection:
        if self._connection is None or self._connection.closed:
            self._connection = psycopg.connect(self.url, connect_timeout=5)
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
