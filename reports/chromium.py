"""Open a report in headless Chromium (Debian's `chromium`) with the network shut off, to take
a screenshot or read the rendered DOM. Used by the tests and `make screenshot`."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

OFFLINE_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # any fetch would fail: the page must not need one
]


def chromium_binary() -> str | None:
    return next(
        (path for name in ("chromium", "chromium-browser", "google-chrome") if (path := shutil.which(name))), None
    )


def _run(html: Path, extra: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    binary = chromium_binary()
    if binary is None:
        raise FileNotFoundError("chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        return subprocess.run(
            [binary, *OFFLINE_FLAGS, f"--user-data-dir={profile}", *extra, html.resolve().as_uri()],
            capture_output=True,
            timeout=timeout_s,
        )


def screenshot(html: Path, png: Path, *, width: int = 1200, height: int = 2600, timeout_s: float = 120) -> None:
    result = _run(html, [f"--window-size={width},{height}", f"--screenshot={png.resolve()}"], timeout_s)
    if result.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium failed ({result.returncode}): {result.stderr.decode(errors='replace')[-500:]}")


def rendered_dom(html: Path, *, timeout_s: float = 120) -> str:
    result = _run(html, ["--dump-dom"], timeout_s)
    if result.returncode != 0:
        raise RuntimeError(f"chromium failed ({result.returncode}): {result.stderr.decode(errors='replace')[-500:]}")
    return result.stdout.decode()
