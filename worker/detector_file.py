"""The learned detector's file, read again when it changes: `learn` can replace it under a running
worker or `serve`, and the next answer is scored by the new one. A replacement that does not load
is logged and the detector in use is kept: a half-written file must not stop the audit."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger("bias_audit.detector_file")


class DetectorFile:
    def __init__(self, path: Path, load: Callable[[Path], Any]) -> None:
        self.path, self.load = path, load
        self.stamp = self._stamp()
        self.detector = load(path)  # at start, a file that does not load is the caller's error

    def _stamp(self) -> tuple[int, int] | None:
        try:
            status = os.stat(self.path)
        except OSError:
            return None
        return status.st_mtime_ns, status.st_size

    def __call__(self) -> Any:
        stamp = self._stamp()
        if stamp is not None and stamp != self.stamp:
            self.stamp = stamp
            try:
                self.detector = self.load(self.path)
                log.info("learned detector reloaded", extra={"version": self.detector.version})
            except Exception as error:  # the reason is logged; the detector in use stays
                log.warning(
                    "learned detector file changed but does not load; keeping the one in use",
                    extra={"error": str(error)[:300]},
                )
        return self.detector
