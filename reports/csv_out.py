"""The report as one long CSV table: a row per (tenant, metric, subject)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import TextIO

from bias_audit.schemas.report import BiasReport, CouncilBias, Estimate, TenantReport
from bias_audit.schemas.safe_text import visible

COLUMNS = [
    "tenant_id",
    "window_start",
    "window_end",
    "metric",
    "subject",
    "point_estimate",
    "ci_lower",
    "ci_upper",
    "p_value",
    "sample_size",
    "sessions",
    "confidence",
    "status",
    "flagged",
]


def _estimate_row(t: TenantReport, metric: str, subject: str, e: Estimate) -> list:
    return [
        t.tenant_id,
        t.window_start,
        t.window_end,
        metric,
        subject,
        e.point_estimate,
        e.ci_lower,
        e.ci_upper,
        e.p_value,
        e.sample_size,
        e.sessions,
        e.confidence,
        e.status,
        e.flagged,
    ]


def _rows(t: TenantReport) -> Iterator[list]:
    def plain(metric: str, subject: str, value, *, p=None, n=None, flagged=False) -> list:
        return [
            t.tenant_id,
            t.window_start,
            t.window_end,
            metric,
            subject,
            value,
            None,
            None,
            p,
            n,
            t.sessions,
            t.confidence,
            "ok" if value is not None else "collecting data",
            flagged,
        ]

    yield _estimate_row(t, "length_correlation", "pooled", t.length_correlation)
    lc = t.length_correlation
    if lc.bootstrap_ci_lower is not None:
        row = _estimate_row(t, "length_correlation_bootstrap", "pooled", lc)
        row[6], row[7] = lc.bootstrap_ci_lower, lc.bootstrap_ci_upper
        yield row
    yield _estimate_row(t, "length_coefficient", "pooled", t.length_control.coefficient)
    for m in t.length_control.models:
        yield plain("model_raw_score", m.model, m.raw_score, n=m.scores)
        yield plain("model_length_controlled_score", m.model, m.length_controlled_score, n=m.scores)
    for e in t.position.effects:
        yield _estimate_row(t, "position_effect", str(e.position), e.effect)
    yield plain(
        "position_joint_test_f", "all", t.position.f_statistic, p=t.position.p_value, flagged=t.position.flagged
    )
    r = t.randomization
    yield plain(
        "randomization_chi_square", "models x positions", r.chi_square, p=r.p_value, n=r.placements, flagged=r.broken
    )
    yield plain("shared_order_fraction", "sessions", r.shared_order_fraction, flagged=r.shared)
    yield _estimate_row(t, "krippendorff_alpha", "all reviewers", t.agreement.krippendorff_alpha)
    for p in t.reviewers:
        yield _estimate_row(t, "reviewer_offset", p.reviewer, p.offset)
        yield _estimate_row(t, "self_preference", p.reviewer, p.self_preference)
    for c in t.position_consistency:
        yield plain("position_consistency", c.reviewer, c.position_consistency, n=c.pairs)
        yield plain("preference_fairness", c.reviewer, c.preference_fairness, n=c.pairs)
    for x in t.trends:
        yield plain(f"trend_{x.metric}", x.subject, x.difference, p=x.p_value, flagged=x.flagged)
    for metric, subject, entry in council_entries(t):
        yield [
            t.tenant_id,
            t.window_start,
            t.window_end,
            metric,
            subject,
            entry.effect,
            entry.ci_lower,
            entry.ci_upper,
            entry.p_value,
            entry.n,
            entry.sessions,
            entry.confidence,
            entry.status,
            entry.flagged,
        ]
    if t.length_given_correctness is not None:
        yield _estimate_row(t, "length_given_correctness", "per 100 length units", t.length_given_correctness)
    for post in t.reviewer_posteriors:
        row = plain("reviewer_posterior_offset", post.reviewer, post.posterior_mean)
        row[6], row[7] = post.credible_lower, post.credible_upper
        yield row
    for model in t.calibrated_view:
        yield plain("calibrated_z", model.model, model.calibrated_z, n=model.scores)


def council_entries(t: TenantReport) -> Iterator[tuple[str, str, CouncilBias]]:
    """(metric, subject, entry) of every council-bias entry, in the contract's section order."""
    for a in t.affinity:
        yield "affinity", f"{a.reviewer} -> {a.model}", a
    for name, entries in (
        ("anchoring", t.anchoring),
        ("style_similarity", t.style_similarity),
        ("self_consistency", t.self_consistency),
    ):
        for e in entries:
            yield name, e.reviewer, e


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralized(cell: object) -> object:
    """A text cell a spreadsheet would run as a formula gets a leading ' (OWASP's advice for CSV
    injection), and control characters (ESC, BEL: a terminal's hyperlinks and title changes when
    the file is printed) are shown as escapes; numbers stay numbers."""
    if not isinstance(cell, str):
        return cell
    cell = visible(cell)
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def render_csv(report: BiasReport, out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for tenant in report.tenants:
        writer.writerows([neutralized(cell) for cell in row] for row in _rows(tenant))
    for entry in report.detector_precision:  # people's reviews: confirmed / reviewed per detector
        writer.writerow(
            [
                neutralized(cell)
                for cell in (
                    entry.tenant_id,
                    None,
                    None,
                    "detector_precision",
                    f"{entry.bias_type}/{entry.analyzer}",
                    entry.precision,
                    entry.ci_lower,
                    entry.ci_upper,
                    None,
                    entry.reviewed,
                    None,
                    None,
                    "ok",
                    None,
                )
            ]
        )
    for history in report.rolled_up:  # counts and means of the days retention rolled up
        for total in history.totals:
            subject = "/".join(part for part in (total.model, total.reviewer, total.bias_type) if part) or "-"
            writer.writerow(
                [
                    neutralized(cell)
                    for cell in (
                        history.tenant_id,
                        history.first_day,
                        history.last_day,
                        f"rolled_up_{total.source}_mean",
                        subject,
                        total.mean,
                        None,
                        None,
                        None,
                        total.items,
                        None,
                        None,
                        "rolled up",
                        None,
                    )
                ]
            )
