"""Structured JSON logs, one object per line, carrying trace_id where there is one."""

from __future__ import annotations

import logging
import sys
from datetime import datetime, timezone

import orjson

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# FastStream adds its own coloured handler to the logger named "faststream"; ours goes through
# the JSON root like every other line.
FASTSTREAM_LOGGER = "bias_audit.faststream"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document = {
            "ts": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,  # which of several processes (serve's, scaled-out workers) said it
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                document[key] = value
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(document, default=str).decode()


def configure_logging(level: str = "INFO", stream=None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # FastStream logs task housekeeping at INFO; ours already say what matters, per session.
    logging.getLogger(FASTSTREAM_LOGGER).setLevel(max(logging.WARNING, root.level))
