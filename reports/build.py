"""Assemble the report document from the windows the reader (or the live Redis window) holds."""

from __future__ import annotations

from datetime import datetime, timezone

from bias_audit.analysis.cross_session import WindowThresholds
from bias_audit.analysis.tenant_report import tenant_report
from bias_audit.schemas.report import BiasReport, ReportInputs, RolledUpHistory
from bias_audit.storage.report_reader import ReadStats, TenantWindows


def build_report(
    windows: list[TenantWindows],
    stats: ReadStats,
    *,
    sources: list[str],
    sessions: int | None,
    days: float | None,
    thresholds: WindowThresholds = WindowThresholds(),
    rolled_up: list[RolledUpHistory] | None = None,
    reviews: tuple[list, list] | None = None,
) -> BiasReport:
    return BiasReport(
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        window_sessions=sessions,
        window_days=days,
        inputs=ReportInputs(
            sources=sources,
            files=stats.files,
            lines=stats.lines,
            records=stats.records,
            sessions_read=stats.sessions,
            duplicate_sessions=stats.duplicate_sessions,
            skipped_lines=stats.skipped_lines,
            skipped_examples=stats.skipped_examples,
        ),
        tenants=[tenant_report(w.cells, w.previous_sessions, thresholds) for w in windows if w.cells.sessions],
        rolled_up=rolled_up or [],
        detector_precision=(reviews or ([], []))[0],
        most_dismissed=(reviews or ([], []))[1],
    )
