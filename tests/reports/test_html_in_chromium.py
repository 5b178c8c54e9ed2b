"""The HTML report opened in headless Chromium with the network shut off: it renders its charts."""

from __future__ import annotations

import os
import struct

import pytest

from bias_audit.analysis.tenant_report import tenant_report
from bias_audit.reports.chromium import chromium_binary, rendered_dom, screenshot
from bias_audit.reports.html import render_html
from bias_audit.schemas.report import BiasReport, ReportInputs
from tests.simulate import Corpus

if chromium_binary() is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI needs chromium for the HTML report test (make test installs it)")
    pytest.skip("chromium is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    corpus = Corpus(sessions=120, seed=7, reviewer_offsets={1: -1.5}, position_effects={0: 0.5}, length_slope=0.3)
    digests = corpus.digests()
    document = BiasReport(
        generated_at="2026-11-22T00:00:00Z",
        window_sessions=100,
        window_days=30,
        inputs=ReportInputs(
            sources=["sim"], files=1, lines=0, records=0, sessions_read=120, duplicate_sessions=0, skipped_lines=0
        ),
        tenants=[tenant_report(digests[20:], digests[:20])],
    )
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(document), encoding="utf-8")
    return path


def test_charts_render_offline(page):
    dom = rendered_dom(page)
    for title in (
        "Reviewer offsets (95% CI)",
        "Position effects (95% CI)",
        "Length vs score, with the fitted line",
        "Reviewer offsets over time",
    ):
        assert title in dom
    assert dom.count("<circle") > 100  # the scatter's points are there
    assert "HARSH:vendor1/model-1" in dom


def test_screenshot_is_a_full_page(page, tmp_path):
    png = tmp_path / "report.png"
    screenshot(page, png, width=1200, height=1800)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1200, 1800)
    assert len(data) > 60_000  # a blank page compresses to a few KB
