"""Regenerate docs/report.png (and docs/report-example.html): the shipped sample sessions run
through the in-process pipeline, reported from the records it wrote, shot in headless Chromium.

    python scripts/report_screenshot.py        (or: make screenshot)
"""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bias_audit.consumers.envelope import Delivery
from bias_audit.reports.build import build_report
from bias_audit.reports.chromium import screenshot
from bias_audit.reports.html import render_html
from bias_audit.storage.report_reader import WindowReader
from bias_audit.worker.composition import in_process_processor, record_store
from bias_audit.worker.samples import SAMPLE_FILE
from bias_audit.worker.settings import Settings


def main() -> None:
    logging.disable(logging.WARNING)  # the pipeline's alert logs are not this script's output
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), consumer_name="docs")
        store = record_store(settings)
        consumer = in_process_processor(settings, store)
        lines = [line for line in SAMPLE_FILE.read_bytes().splitlines() if line.strip()]
        deliveries = [Delivery(delivery_id=f"line-{n}", body=line, source_topic="docs") for n, line in enumerate(lines)]
        asyncio.run(consumer.process(deliveries))
        store.close()
        reader = WindowReader(sessions=100, days=None)
        reader.read([store.path])
        document = build_report(
            reader.windows(), reader.stats, sources=["worker/samples/council_sessions.jsonl"], sessions=100, days=None
        )
    html = ROOT / "docs" / "report-example.html"
    html.write_text(render_html(document), encoding="utf-8")
    screenshot(html, ROOT / "docs" / "report.png", width=1200, height=2400)
    print(f"wrote {html.relative_to(ROOT)} and docs/report.png")


if __name__ == "__main__":
    main()
