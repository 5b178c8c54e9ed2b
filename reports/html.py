"""The report as one self-contained HTML file: inline CSS and SVG, no script, no fetch."""

from __future__ import annotations

from html import escape
from typing import Any

from bias_audit.schemas.report import BiasReport, Estimate, TenantReport

from .summary import plain_findings
from .svg import forest_plot, line_chart, scatter
from .text import collecting, fmt_estimate, fmt_p, no_models_reason, verdict, what_was_read

CHART_WIDTH = 500  # two charts side by side in the page's 1100 px

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:1100px;color:#0f172a;
background:#fff;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{font-size:20px;border-bottom:2px solid #e2e8f0;padding-bottom:4px;margin-top:32px}
.meta{color:#475569}.flags span{display:inline-block;background:#fee2e2;color:#991b1b;border-radius:4px;
padding:2px 8px;margin:2px;font-weight:600}.ok{background:#dcfce7;color:#166534;border-radius:4px;padding:2px 8px}
.warn{color:#92400e;background:#fef3c7;padding:6px 10px;border-radius:4px;margin:6px 0}
table{border-collapse:collapse;margin:10px 0}td,th{border-bottom:1px solid #e2e8f0;padding:4px 10px;text-align:left}
th{background:#f8fafc}.num{text-align:right;font-variant-numeric:tabular-nums}.flag{color:#b91c1c;font-weight:700}
.collecting{background:#e2e8f0;color:#334155;border-radius:4px;padding:2px 8px}
.charts{display:flex;flex-wrap:wrap;gap:18px}.chart{border:1px solid #e2e8f0;border-radius:6px;padding:10px}
"""


def _flag(flagged: bool, estimated: bool = True) -> str:
    if not estimated:
        return "-"
    return '<span class="flag">FLAG</span>' if flagged else "ok"


def _metric_rows(t: TenantReport) -> str:
    rows = []
    lc = t.length_correlation
    boot = (
        f"<br>session bootstrap [{lc.bootstrap_ci_lower:+.2f}, {lc.bootstrap_ci_upper:+.2f}]"
        if lc.bootstrap_ci_lower is not None
        else ""
    )

    def row(
        name: str,
        e: Estimate | None,
        text: str | None,
        p: float | None,
        flagged: bool,
        note: str = "",
        estimated: bool | None = None,
    ) -> None:
        value = escape(text if text is not None else fmt_estimate(e) if e is not None else "-") + note
        n = "" if e is None else f"{e.sample_size} / {e.sessions}"
        shown = estimated if estimated is not None else e is not None and e.status == "ok"
        rows.append(
            f"<tr><td>{escape(name)}</td><td>{value}</td><td class=num>{n}</td>"
            f"<td class=num>{fmt_p(p)}</td><td>{_flag(flagged, shown)}</td></tr>"
        )

    row("Length vs score (pooled r)", lc, None, lc.p_value, lc.flagged, boot)
    coefficient = t.length_control.coefficient
    row("Length term in scores (points)", coefficient, None, coefficient.p_value, coefficient.flagged)
    position = t.position
    if position.status == "ok":
        biggest = max(position.effects, key=lambda e: abs(e.effect.point_estimate or 0))
        row(
            f"Position {biggest.position} vs {position.baseline_position} (largest; joint F test p)",
            biggest.effect,
            None,
            position.p_value,
            position.flagged,
        )
    else:
        row("Position effect", None, position.status, None, False, estimated=False)
    r = t.randomization
    shared = "" if r.shared_order_fraction is None else f"; shared order in {r.shared_order_fraction:.0%} of sessions"
    if r.balanced:
        shared += "; balanced design" + (" (Williams: carryover too)" if r.carryover_balanced else " (Latin square)")
    row(
        "Randomization balance (chi-square)",
        None,
        (f"chi2 {r.chi_square:.1f}, df {r.degrees_of_freedom}" if r.status == "ok" else r.status) + shared,
        r.p_value,
        r.broken or r.shared,
        estimated=r.status == "ok",
    )
    if r.reviewer_p_value is not None:
        within = (
            "balanced within each reviewer"
            if r.reviewers_balanced
            else f"chi2 {r.reviewer_chi_square:.1f}, df {r.reviewer_degrees_of_freedom}"
        )
        if r.confounded_reviewers:
            within += "; position confounded with the reviewer for " + ", ".join(r.confounded_reviewers)
        row(
            "Balance within reviewers (chi-square per reviewer)",
            None,
            within,
            r.reviewer_p_value,
            bool(r.confounded_reviewers),
            estimated=True,
        )
    alpha = t.agreement.krippendorff_alpha
    row("Agreement (Krippendorff's alpha, interval)", alpha, None, None, False)
    return "".join(rows)


def _reviewer_table(t: TenantReport) -> str:
    rows = "".join(
        f"<tr><td>{escape(p.reviewer)}</td><td class=num>{p.sessions}</td>"
        f"<td class=num>{'' if p.mean_score is None else f'{p.mean_score:.2f}'}</td>"
        f"<td>{escape(fmt_estimate(p.offset))}</td><td>{escape(fmt_estimate(p.self_preference))}</td>"
        f"<td class=num>{'' if p.agreement_with_peers is None else f'{p.agreement_with_peers:.2f}'}</td>"
        f"<td class=flag>{escape(', '.join(p.flags))}</td></tr>"
        for p in t.reviewers
    )
    return (
        "<table><tr><th>reviewer</th><th>sessions</th><th>mean score</th><th>offset [95% CI]</th>"
        f"<th>self-preference [95% CI]</th><th>r with peers</th><th>flags</th></tr>{rows}</table>"
    )


def _model_table(t: TenantReport) -> str:
    if not t.length_control.models:
        return f'<p class="warn">{escape(no_models_reason(t))}</p>'
    rows = "".join(
        f"<tr><td>{escape(m.model)}</td><td class=num>{m.raw_score:.2f}</td><td class=num>{m.raw_rank}</td>"
        f"<td class=num>{'-' if m.length_controlled_score is None else f'{m.length_controlled_score:.2f}'}</td>"
        f"<td class=num>{'-' if m.length_controlled_rank is None else m.length_controlled_rank}</td></tr>"
        for m in t.length_control.models
    )
    return (
        "<table><tr><th>model</th><th>raw score</th><th>rank</th><th>length-controlled</th><th>rank</th></tr>"
        f"{rows}</table>"
    )


def _consistency_table(t: TenantReport) -> str:
    if not t.position_consistency:
        return ""
    rows = "".join(
        f"<tr><td>{escape(c.reviewer)}</td><td class=num>{c.pairs}</td><td class=num>{c.position_consistency:.2f}</td>"
        f"<td class=num>{c.preference_fairness:+.2f}</td></tr>"
        for c in t.position_consistency
    )
    return (
        "<h3>Swapped pairs</h3><p class=meta>Position consistency: share of pairs judged alike in both orders "
        "(MT-Bench). Preference fairness: -1 primacy, 0 fair, +1 recency (Shi et al. 2024).</p>"
        f"<table><tr><th>reviewer</th><th>pairs</th><th>PC</th><th>PF</th></tr>{rows}</table>"
    )


def _council_table(t: TenantReport) -> str:
    from .csv_out import council_entries

    entries = list(council_entries(t))
    if not entries:
        return ""
    rows = "".join(
        f"<tr><td>{escape(metric.replace('_', ' '))}</td><td>{escape(subject)}</td>"
        f"<td class=num>{'' if e.effect is None else f'{e.effect:+.2f}'}</td>"
        f"<td class=num>{'' if e.ci_lower is None or e.ci_upper is None else f'[{e.ci_lower:+.2f}, {e.ci_upper:+.2f}]'}</td>"
        f"<td class=num>{fmt_p(e.p_value)}</td><td class=num>{e.n}</td><td>{_flag(e.flagged, e.effect is not None)}</td></tr>"
        for metric, subject, e in entries
    )
    posteriors = "".join(
        f"<tr><td>{escape(p.reviewer)}</td><td class=num>{'' if p.offset is None else f'{p.offset:+.2f}'}</td>"
        f"<td class=num>{'' if p.posterior_mean is None else f'{p.posterior_mean:+.2f} [{p.credible_lower:+.2f}, {p.credible_upper:+.2f}]'}</td>"
        f"<td class=num>{'' if p.shrinkage is None else f'{p.shrinkage:.2f}'}</td></tr>"
        for p in t.reviewer_posteriors
    )
    calibrated = "".join(
        f"<tr><td>{escape(m.model)}</td><td class=num>{m.raw_mean:.2f}</td>"
        f"<td class=num>{'' if m.calibrated_z is None else f'{m.calibrated_z:+.2f}'}</td></tr>"
        for m in t.calibrated_view
    )
    return (
        "<h3>Council biases</h3><p class=meta>Affinity: points a reviewer gives a model beyond its harshness and "
        "the model's quality; anchoring: later scores per point of departure on the first-seen answer; style "
        "mimicry: points per unit of similarity to the reviewer's own answer; self-consistency: SD of the scores "
        "of the same content seen again.</p><table><tr><th>bias</th><th>subject</th><th>effect</th><th>95% CI</th>"
        f"<th>p</th><th>n</th><th></th></tr>{rows}</table>"
        + (
            "<h3>Reviewer profiles, partially pooled</h3><table><tr><th>reviewer</th><th>offset</th>"
            f"<th>pooled [95% credible]</th><th>shrinkage</th></tr>{posteriors}</table>"
            if posteriors
            else ""
        )
        + (
            "<h3>Calibrated view</h3><p class=meta>Scores z-normalized per reviewer, for analytics only: never "
            "fed back into a council's vote.</p><table><tr><th>model</th><th>raw mean</th><th>calibrated z</th>"
            f"</tr>{calibrated}</table>"
            if calibrated
            else ""
        )
    )


def _trend_table(t: TenantReport) -> str:
    items = [(f"{x.metric} · {x.subject}", x) for x in t.trends]
    for cp in t.change_points:
        items.extend(
            (f"config {cp.from_version} → {cp.to_version} at {cp.at[:16]} · {x.metric} · {x.subject}", x)
            for x in cp.tests
        )
    if not items:
        return ""

    def value(x, v: float | None) -> str:  # a mean score reads as one (6.17); offsets and r with their sign
        return "" if v is None else f"{v:.2f}" if x.metric == "model_mean_score" else f"{v:+.2f}"

    rows = "".join(
        f"<tr><td>{escape(label)}</td><td class=num>{value(x, x.previous)}</td>"
        f"<td class=num>{value(x, x.current)}</td><td class=num>{fmt_p(x.p_value)}</td>"
        f"<td>{_flag(x.flagged)}</td></tr>"
        for label, x in items
    )
    return (
        "<h3>Trends and config changes</h3><table><tr><th>what</th><th>before</th><th>after</th><th>p</th>"
        f"<th></th></tr>{rows}</table>"
    )


def _charts(t: TenantReport) -> str:
    charts = []
    offsets = [
        (p.reviewer, p.offset.point_estimate, p.offset.ci_lower, p.offset.ci_upper, p.offset.flagged)
        for p in t.reviewers
        if p.offset.point_estimate is not None
    ]
    charts.append(
        forest_plot(
            offsets,
            title="Reviewer offsets (95% CI)",
            unit="points vs the median reviewer",
            band=0.5,
            width=CHART_WIDTH,
        )
    )
    if t.position.status == "ok":
        effects = [(f"position {t.position.baseline_position} (baseline)", 0.0, None, None, False)] + [
            (
                f"position {e.position}",
                e.effect.point_estimate,
                e.effect.ci_lower,
                e.effect.ci_upper,
                t.position.flagged,
            )
            for e in t.position.effects
            if e.effect.point_estimate is not None
        ]
        charts.append(
            forest_plot(
                effects, title="Position effects (95% CI)", unit="points vs the first position", width=CHART_WIDTH
            )
        )
    affinities = [
        (f"{a.reviewer} → {a.model}", a.effect, a.ci_lower, a.ci_upper, a.flagged)
        for a in t.affinity
        if a.effect is not None
    ]
    charts.append(
        forest_plot(
            affinities,
            title="Reviewer-model affinity (95% CI)",
            unit="points beyond harshness and quality",
            band=0.5,
            width=CHART_WIDTH,
        )
    )
    pooled = [
        (p.reviewer, p.posterior_mean, p.credible_lower, p.credible_upper, False)
        for p in t.reviewer_posteriors
        if p.posterior_mean is not None
    ]
    charts.append(
        forest_plot(
            pooled,
            title="Reviewer offsets, partially pooled (95% credible)",
            unit="points vs the council",
            band=0.5,
            width=CHART_WIDTH,
        )
    )
    fitted = t.length_correlation.status == "ok"  # no line drawn where the table says "collecting data"
    charts.append(
        scatter(
            t.length_points,
            t.length_fit if fitted else None,
            title="Length vs score, with the fitted line"
            if fitted
            else f"Length vs score ({t.length_correlation.status}: no fitted line)",
            x_label=f"response length ({t.length_unit})",
            y_label="score, reviewer offsets removed",
            width=CHART_WIDTH,
        )
    )
    if len(t.timeline) >= 2:
        same_day = t.timeline[0].start[:10] == t.timeline[-1].end[:10]
        labels = [b.start[11:16] if same_day else b.start[5:10] for b in t.timeline]
        reviewers = sorted({name for b in t.timeline for name in b.reviewer_offsets})
        series = {name: [b.reviewer_offsets.get(name) for b in t.timeline] for name in reviewers}
        charts.append(
            line_chart(labels, series, title="Reviewer offsets over time", y_label="points", width=CHART_WIDTH)
        )
        charts.append(
            line_chart(
                labels,
                {"length r": [b.length_correlation for b in t.timeline]},
                title="Length-score correlation over time",
                y_label="r",
                width=CHART_WIDTH,
            )
        )
    return "".join(f'<div class="chart">{c}</div>' for c in charts if c)


def _tenant(t: TenantReport) -> str:
    if t.flags:
        flags = "<div class=flags>" + "".join(f"<span>{escape(f)}</span>" for f in t.flags) + "</div>"
    elif collecting(t):
        flags = f'<p><span class="collecting">{escape(verdict(t))}</span></p>'
    else:
        flags = f'<p><span class="ok">{escape(verdict(t))}</span></p>'

    warnings = "".join(f'<div class="warn">{escape(w)}</div>' for w in t.warnings)
    summary = "".join(f"<li>{escape(sentence)}</li>" for sentence in plain_findings(t))
    return (
        f"<h2>Tenant {escape(t.tenant_id)}</h2>"
        f"<p class=meta>{t.sessions} sessions, {t.scores} peer scores, confidence <b>{t.confidence}</b>; "
        f"window {escape(t.window_start or '-')} to {escape(t.window_end or '-')}</p>"
        f'<section class="summary" aria-label="in plain words"><h3>In plain words</h3><ul>{summary}</ul></section>'
        f"{flags}{warnings}"
        f'<div class="charts">{_charts(t)}</div>'
        "<h3>Window metrics</h3><table><tr><th>metric</th><th>estimate [95% CI]</th><th>n / sessions</th>"
        f"<th>p</th><th></th></tr>{_metric_rows(t)}</table>"
        f"<h3>Reviewers</h3>{_reviewer_table(t)}<h3>Models: raw and length-controlled</h3>{_model_table(t)}"
        f"{_consistency_table(t)}{_council_table(t)}{_trend_table(t)}"
    )


def _precision(report: BiasReport) -> str:
    """Detector precision from people's reviews: a row per detector, the CI drawn as a bar."""
    if not report.detector_precision:
        return ""
    rows = "".join(
        f"<tr><td>{escape(e.tenant_id)}</td><td>{escape(e.bias_type)}</td><td>{escape(e.analyzer)}</td>"
        f"<td>{e.reviewed}</td><td>{e.precision:.0%} ({e.ci_lower:.0%}-{e.ci_upper:.0%})"
        f"<svg width='120' height='8' role='img' aria-label='95% CI'><rect x='{e.ci_lower * 120:.1f}' y='2' "
        f"width='{(e.ci_upper - e.ci_lower) * 120:.1f}' height='4' fill='#8aa2d8'/><circle cx='{e.precision * 120:.1f}' "
        f"cy='4' r='3'/></svg></td></tr>"
        for e in report.detector_precision
    )
    dismissed = "".join(
        f"<li>{escape(d.evidence)} ({escape(d.bias_type)}): {d.dismissed} dismissed, {d.confirmed} confirmed</li>"
        for d in report.most_dismissed
    )
    return (
        "<section><h2>Detector precision from reviews</h2><table><tr><th>tenant</th><th>bias type</th>"
        "<th>analyzer</th><th>reviewed</th><th>confirmed share (Wilson 95% CI)</th></tr>"
        + rows
        + "</table>"
        + (f"<h3>Most often dismissed</h3><ul>{dismissed}</ul>" if dismissed else "")
        + "</section>"
    )


def _quality(report: BiasReport) -> str:
    """The flags' precision and recall estimated from reviews."""
    if not report.detector_quality:
        return ""

    def share(value: float | None, ci: tuple[float, float] | None) -> str:
        return "-" if value is None else f"{value:.0%}" + (f" ({ci[0]:.0%}-{ci[1]:.0%})" if ci else "")

    rows = "".join(
        f"<tr><td>{escape(e.tenant_id)}</td><td>{escape(e.bias_type)}</td><td>{e.flagged}</td>"
        f"<td>{share(e.precision, e.precision_ci)}</td><td>{e.precision_reviews}</td>"
        f"<td>{share(e.recall, e.recall_ci)}</td><td>{e.sampled_reviews}</td></tr>"
        for e in report.detector_quality
    )
    return (
        "<section><h2>Detector quality from reviews</h2><table><tr><th>tenant</th><th>bias type</th><th>flagged</th>"
        "<th>precision (95% CI)</th><th>reviews</th><th>recall (95% CI)</th><th>sampled reviews</th></tr>"
        + rows
        + "</table></section>"
    )


def _disparity(report: BiasReport) -> str:
    """Live traffic's group disparity, with the caveat that it is unpaired."""
    if not report.group_disparity:
        return ""
    metrics = ("refusal_rate_gap", "sentiment_gap", "toxicity_gap", "length_ratio")

    def cell(metric: str, gap: Any) -> str:
        if metric == "length_ratio":
            text = f"{gap.estimate:.2f}x ({gap.ci_lower:.2f}-{gap.ci_upper:.2f})"
        else:
            text = f"{gap.estimate:+.3f} ({gap.ci_lower:+.3f} to {gap.ci_upper:+.3f})"
        return f'<td style="{"color:#a3262a;font-weight:600" if gap.flagged else ""}">{text}</td>'

    rows = "".join(
        f"<tr><td>{escape(e.tenant_id)}</td><td>{escape(e.llm_model)}</td><td>{escape(e.axis)}</td>"
        f"<td>{escape(e.group)}</td><td>{e.answers}</td>" + "".join(cell(m, getattr(e, m)) for m in metrics) + "</tr>"
        for e in report.group_disparity
    )
    return (
        "<section><h2>Group disparity over live traffic</h2>"
        f"<p>{escape(report.group_disparity_note or '')}</p><table><tr><th>tenant</th><th>model</th><th>axis</th>"
        "<th>group</th><th>answers</th>"
        + "".join(f"<th>{m} (95% CI)</th>" for m in metrics)
        + "</tr>"
        + rows
        + "</table></section>"
    )


def render_html(report: BiasReport) -> str:
    inputs = report.inputs
    window = f"last {report.window_sessions or 'all'} sessions" + (
        f" within {report.window_days:g} days" if report.window_days else ""
    )
    body = "".join(_tenant(t) for t in report.tenants) or "<p>No sessions in the window.</p>"
    body += _precision(report) + _quality(report) + _disparity(report)
    if report.judges:
        from .judges import judges_html_body

        body += "".join(
            f"<h2>Judges of tenant {escape(section.tenant_id)}</h2>{judges_html_body(section.report)}"
            for section in report.judges
        )
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>Bias report</title><style>{STYLE}</style></head><body>"
        f"<h1>LLM council bias report</h1><p class=meta>Generated {escape(report.generated_at)} · {window} · "
        f"{escape(what_was_read(inputs))}. Scores in points of a 1-10 scale; every estimate with its 95% CI; "
        "a flag needs both a practical size and p &lt; 0.05.</p>"
        f"{body}</body></html>"
    )
