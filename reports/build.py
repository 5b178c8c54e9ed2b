"""Assemble the report document from the windows the reader (or the live Redis window) holds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial

from bias_audit.analysis.cross_session import WindowThresholds
from bias_audit.analysis.tenant_report import REPORT_STEPS, tenant_report
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
    progress: Callable[[str], None] | None = None,
) -> BiasReport:
    """The report; `progress` hears "tenant: section" as each of a tenant's sections begins
    (report_steps(windows) of them)."""
    tenants = []
    for window in windows:
        if window.cells.sessions:
            told = None if progress is None else partial(_step, progress, window)
            tenants.append(tenant_report(window.cells, window.previous_sessions, thresholds, told))
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
        tenants=tenants,
        rolled_up=rolled_up or [],
        detector_precision=(reviews or ([], []))[0],
        most_dismissed=(reviews or ([], []))[1],
    )


def report_steps(windows: list[TenantWindows]) -> int:
    """How many sections build_report runs over these windows."""
    return len(REPORT_STEPS) * sum(1 for w in windows if w.cells.sessions)


def _step(progress: Callable[[str], None], window: TenantWindows, section: str) -> None:
    progress(f"{window.tenant_id}: {section}")
