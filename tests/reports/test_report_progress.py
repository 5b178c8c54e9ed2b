"""The report says which section it is in: each tenant's sections in the order they run, and a
bar on a terminal while a large window is analysed."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

from bias_audit.analysis.cross_session import WindowThresholds
from bias_audit.analysis.tenant_report import REPORT_STEPS, tenant_report
from bias_audit.analysis.window_cells import window_cells
from bias_audit.reports.build import build_report, report_steps
from bias_audit.storage.report_reader import ReadStats, TenantWindows
from tests.simulate import Corpus

SECTIONS = [
    "length and position fits",
    "length correlation",
    "position consistency",
    "randomization",
    "trends",
    "timeline and change points",
    "reviewer profiles",
    "agreement",
    "self-consistency and calibration",
    "pair fit",
    "affinity",
    "anchoring",
    "style mimicry",
    "finding drivers",
]
FAST = WindowThresholds(bootstrap_replicates=50)


def test_each_section_is_told_as_it_begins_in_the_order_it_runs():
    heard: list[str] = []
    tenant_report(window_cells(Corpus(sessions=30, seed=4).digests()), 0, FAST, heard.append)
    assert heard == SECTIONS == list(REPORT_STEPS)  # the count the bar is sized by is the sections told


def test_the_report_tells_each_tenants_sections_and_counts_them():
    windows = [
        TenantWindows(name, window_cells(Corpus(sessions=sessions, seed=5, tenant=name).digests()), 0)
        for name, sessions in (("acme", 20), ("beta", 15), ("empty", 0))
    ]
    heard: list[str] = []
    build_report(windows, ReadStats(), sources=[], sessions=None, days=None, thresholds=FAST, progress=heard.append)
    assert heard == [f"acme: {s}" for s in SECTIONS] + [f"beta: {s}" for s in SECTIONS]
    assert report_steps(windows) == 28


def test_the_bar_shows_the_steps_done_and_the_one_under_way_on_a_terminal():
    script = (
        "from bias_audit.worker.commands.common import step_bar\n"
        "with step_bar('analysing', 3) as step:\n"
        "    for name in ('first', 'second', 'third'):\n"
        "        step(name)\n"
        "        import time; time.sleep(0.3)\n"
    )
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", script], stderr=follower, stdout=subprocess.DEVNULL)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal's other end closed
            break
        if not chunk:
            break
        shown += chunk
    assert process.wait(timeout=30) == 0
    lines = re.split(r"[\r\n]", shown.decode(errors="replace"))
    # each step's line: its name, and the steps done before it
    for name, done in (("second", "1/3"), ("third", "2/3")):
        assert any(f"analysing {name}" in line and done in line for line in lines), (name, lines)
