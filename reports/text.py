"""The report as rich tables, readable in 80 columns."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from bias_audit.schemas.report import BiasReport, Estimate, ReportInputs, RolledUpHistory, TenantReport
from bias_audit.schemas.safe_text import visible

from .summary import plain_findings


def plain(text: str) -> Text:
    """Text from the data (ids, versions, labels): never read as markup ("[/]" would crash the
    report, "[link=...]" make a link), its control characters shown, never sent to the terminal."""
    return Text(visible(text))


def fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    return "<1e-6" if p < 1e-6 else f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def fmt_estimate(e: Estimate, digits: int = 2, signed: bool = True) -> str:
    if e.status != "ok" or e.point_estimate is None:
        return e.status
    sign = "+" if signed else ""
    text = f"{e.point_estimate:{sign}.{digits}f}"
    if e.ci_lower is not None and e.ci_upper is not None:
        text += f" [{e.ci_lower:{sign}.{digits}f}, {e.ci_upper:{sign}.{digits}f}]"
    return text


def _flag(flagged: bool, estimated: bool = True) -> Text:
    """FLAG, ok, or - where there is no estimate yet (an "ok" there would read as a clean bill)."""
    if not estimated:
        return Text("-")
    return Text("FLAG", style="bold red") if flagged else Text("ok", style="green")


def collecting(t: TenantReport) -> bool:
    """Too few sessions for any window metric: say so instead of "no bias flagged"."""
    return t.confidence == "insufficient"


def verdict(t: TenantReport) -> str:
    """The tenant's one-line status, as the text and HTML reports both show it."""
    if t.flags:
        return "flags: " + ", ".join(t.flags)
    if collecting(t):
        return f"collecting data: {t.sessions} sessions in the window, metrics need 10"
    return "no bias flagged"


def no_models_reason(t: TenantReport) -> str:
    return f"no model scores yet ({t.length_control.status})"


def _header(t: TenantReport) -> Text:
    text = Text()
    text.append(f"tenant {visible(t.tenant_id)}", style="bold")
    text.append(f"  {t.sessions} sessions, {t.scores} peer scores, confidence {t.confidence}\n")
    text.append(f"window {visible(t.window_start or '-')} .. {visible(t.window_end or '-')}\n")
    text.append(visible(verdict(t)), style="bold red" if t.flags else "yellow" if collecting(t) else "green")
    for sentence in plain_findings(t):  # as the HTML report says them
        text.append(f"\n- {visible(sentence)}")
    for warning in t.warnings:
        text.append(f"\nnote: {visible(warning)}", style="yellow")
    return text


def _metrics(t: TenantReport) -> Table:
    table = Table(title="Window metrics (points of a 1-10 scale; 95% CI)", title_justify="left", expand=False)
    table.add_column("metric")
    table.add_column("estimate [95% CI]")
    table.add_column("n / sessions", justify="right")
    table.add_column("p", justify="right")
    table.add_column("", justify="center")

    def counts(e: Estimate) -> str:
        return f"{e.sample_size} / {e.sessions}"

    lc = t.length_correlation
    length_text = fmt_estimate(lc)
    if lc.bootstrap_ci_lower is not None:
        length_text += f"\nsession bootstrap [{lc.bootstrap_ci_lower:+.2f}, {lc.bootstrap_ci_upper:+.2f}]"
    table.add_row("length vs score r", length_text, counts(lc), fmt_p(lc.p_value), _flag(lc.flagged, lc.status == "ok"))
    coefficient = t.length_control.coefficient
    table.add_row(
        "length term in scores",
        fmt_estimate(coefficient),
        counts(coefficient),
        fmt_p(coefficient.p_value),
        _flag(coefficient.flagged, coefficient.status == "ok"),
    )
    position = t.position
    if position.status == "ok":
        biggest = max(position.effects, key=lambda e: abs(e.effect.point_estimate or 0))
        table.add_row(
            f"position {biggest.position} vs {position.baseline_position} (largest)",
            fmt_estimate(biggest.effect),
            counts(biggest.effect),
            fmt_p(position.p_value),
            _flag(position.flagged),
        )
    else:
        table.add_row("position effect", position.status, "", "-", _flag(False, False))
    balance = t.randomization
    balance_text = (
        balance.status if balance.status != "ok" else f"chi2 {balance.chi_square:.1f}, df {balance.degrees_of_freedom}"
    )
    if balance.shared_order_fraction is not None:
        balance_text += f"\nshared order in {balance.shared_order_fraction:.0%} of sessions"
    if balance.balanced:
        balance_text += "\nbalanced design" + (
            " (Williams: carryover too)" if balance.carryover_balanced else " (Latin square)"
        )
    table.add_row(
        "randomization balance",
        balance_text,
        "",
        fmt_p(balance.p_value),
        _flag(balance.broken or balance.shared, balance.status == "ok"),
    )
    if balance.reviewer_p_value is not None:
        within = (
            "balanced within each reviewer"
            if balance.reviewers_balanced
            else f"chi2 {balance.reviewer_chi_square:.1f}, df {balance.reviewer_degrees_of_freedom}"
        )
        if balance.confounded_reviewers:
            within += "\nconfounded: " + ", ".join(balance.confounded_reviewers)
        table.add_row(
            "balance within reviewers",
            plain(within),
            "",
            fmt_p(balance.reviewer_p_value),
            _flag(bool(balance.confounded_reviewers)),
        )
    alpha = t.agreement.krippendorff_alpha
    table.add_row("agreement (Krippendorff alpha)", fmt_estimate(alpha, signed=False), counts(alpha), "-", Text("-"))
    return table


def _name_column(table: Table, title: str) -> None:
    """A column of reviewer or model names: never split (the numbers' columns wrap instead)."""
    table.add_column(title, no_wrap=True)


def _reviewers(t: TenantReport) -> Table:
    table = Table(
        title="Reviewers (n sessions; offset vs the median reviewer; self-preference)",
        title_justify="left",
        pad_edge=False,
    )
    _name_column(table, "reviewer")
    table.add_column("n", justify="right")  # sessions: the title says so
    table.add_column("mean", justify="right")
    table.add_column("offset [CI]")
    table.add_column("self [CI]")  # self-preference: the title says so
    table.add_column("r peers", justify="right")
    table.add_column("flags", overflow="fold", max_width=16)
    for r in t.reviewers:
        table.add_row(
            plain(r.reviewer),
            str(r.sessions),
            "-" if r.mean_score is None else f"{r.mean_score:.2f}",
            fmt_estimate(r.offset),
            fmt_estimate(r.self_preference),
            "-" if r.agreement_with_peers is None else f"{r.agreement_with_peers:.2f}",
            Text(visible(", ".join(r.flags)) or "-", style="bold red" if r.flags else ""),
        )
    return table


def _models(t: TenantReport) -> RenderableType:
    if not t.length_control.models:
        return Text(f"Models: {no_models_reason(t)}", style="yellow")
    table = Table(title="Models: raw and length-controlled scores", title_justify="left")
    _name_column(table, "model")
    table.add_column("raw", justify="right")
    table.add_column("rank", justify="right")
    table.add_column("LC", justify="right")
    table.add_column("LC rank", justify="right")
    for m in t.length_control.models:
        table.add_row(
            plain(m.model),
            f"{m.raw_score:.2f}",
            str(m.raw_rank),
            "-" if m.length_controlled_score is None else f"{m.length_controlled_score:.2f}",
            "-" if m.length_controlled_rank is None else str(m.length_controlled_rank),
        )
    return table


COUNCIL_LABELS = {
    "affinity": "affinity",
    "anchoring": "anchoring (slope)",
    "style_similarity": "style mimicry (pts/sim)",
    "self_consistency": "within-content SD",
}


def _council(t: TenantReport, *, everything: bool) -> RenderableType | None:
    """The council biases: the flagged entries (all of them with --verbose)."""
    from .csv_out import council_entries

    entries = [(metric, subject, e) for metric, subject, e in council_entries(t) if everything or e.flagged]
    if not entries:
        return None
    table = Table(
        title="Council biases" + ("" if everything else " (flagged; --verbose for all)"), title_justify="left"
    )
    table.add_column("bias", overflow="fold")
    _name_column(table, "subject")
    table.add_column("effect [CI]")
    table.add_column("p", justify="right")
    table.add_column("n", justify="right")
    table.add_column("", justify="center")
    for metric, subject, e in entries:
        value = (
            "-"
            if e.effect is None
            else (
                f"{e.effect:+.2f} [{e.ci_lower:+.2f}, {e.ci_upper:+.2f}]"
                if e.ci_lower is not None and e.ci_upper is not None
                else f"{e.effect:+.2f}"
            )
        )
        table.add_row(
            COUNCIL_LABELS[metric],
            plain(subject.replace(" -> ", " ->\n")),
            value,
            fmt_p(e.p_value),
            str(e.n),
            _flag(e.flagged, e.effect is not None),
        )
    return table


def _posteriors(t: TenantReport) -> Table | None:
    if not t.reviewer_posteriors:
        return None
    table = Table(title="Reviewer profiles, partially pooled (empirical Bayes)", title_justify="left")
    _name_column(table, "reviewer")
    table.add_column("offset", justify="right")
    table.add_column("pooled [95% credible]")
    table.add_column("shrinkage", justify="right")
    for post in t.reviewer_posteriors:
        table.add_row(
            plain(post.reviewer),
            "-" if post.offset is None else f"{post.offset:+.2f}",
            "-"
            if post.posterior_mean is None
            else f"{post.posterior_mean:+.2f} [{post.credible_lower:+.2f}, {post.credible_upper:+.2f}]",
            "-" if post.shrinkage is None else f"{post.shrinkage:.2f}",
        )
    return table


def _calibrated(t: TenantReport) -> Table | None:
    if not t.calibrated_view:
        return None
    table = Table(title="Calibrated view (scores z-normalized per reviewer; analytics only)", title_justify="left")
    _name_column(table, "model")
    table.add_column("raw mean", justify="right")
    table.add_column("calibrated z", justify="right")
    for model in t.calibrated_view:
        table.add_row(
            plain(model.model),
            f"{model.raw_mean:.2f}",
            "-" if model.calibrated_z is None else f"{model.calibrated_z:+.2f}",
        )
    return table


def _position_effects(t: TenantReport) -> Table | None:
    if not t.position.effects:
        return None
    table = Table(title=f"Position effects vs position {t.position.baseline_position}", title_justify="left")
    table.add_column("position", justify="right")
    table.add_column("effect [CI]")
    table.add_column("p", justify="right")
    for e in t.position.effects:
        table.add_row(str(e.position), fmt_estimate(e.effect), fmt_p(e.effect.p_value))
    return table


def _swapped_pairs(t: TenantReport) -> Table | None:
    if not t.position_consistency:
        return None
    table = Table(title="Swapped pairs: position consistency (PC), preference fairness (PF)", title_justify="left")
    _name_column(table, "reviewer")
    table.add_column("pairs", justify="right")
    table.add_column("PC", justify="right")
    table.add_column("PF", justify="right")
    for c in t.position_consistency:
        table.add_row(plain(c.reviewer), str(c.pairs), f"{c.position_consistency:.2f}", f"{c.preference_fairness:+.2f}")
    return table


def _over_time(t: TenantReport) -> Table | None:
    if not t.timeline:
        return None
    table = Table(title="Over time", title_justify="left")
    table.add_column("from")
    table.add_column("sessions", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("length r", justify="right")
    for b in t.timeline:
        table.add_row(
            plain(b.start[:16]),
            str(b.sessions),
            "-" if b.mean_score is None else f"{b.mean_score:.2f}",
            "-" if b.length_correlation is None else f"{b.length_correlation:+.2f}",
        )
    return table


def _changes(t: TenantReport) -> Table | None:
    changes = [(f"{x.metric} {x.subject}", x) for x in t.trends]
    for cp in t.change_points:
        changes.extend((f"{cp.from_version}->{cp.to_version} {x.metric} {x.subject}", x) for x in cp.tests)
    if not changes:
        return None
    table = Table(title="Trends (previous window -> this) and config changes", title_justify="left")
    table.add_column("what", overflow="fold", max_width=36)
    table.add_column("change", justify="right")
    table.add_column("p", justify="right")
    table.add_column("", justify="center")
    for label, x in changes:
        table.add_row(
            plain(label), "-" if x.difference is None else f"{x.difference:+.2f}", fmt_p(x.p_value), _flag(x.flagged)
        )
    return table


def _verbose(t: TenantReport) -> list:
    """The --verbose tables, those with something to show."""
    tables = (_posteriors(t), _calibrated(t), _position_effects(t), _swapped_pairs(t), _over_time(t), _changes(t))
    return [table for table in tables if table is not None]


def what_was_read(inputs: ReportInputs) -> str:
    """Where the sessions came from, as the text and HTML reports both say it."""
    source = inputs.sources[0] if len(inputs.sources) == 1 else ""
    if source.startswith(("postgresql://", "postgres://")) or "dbname=" in source or "host=" in source:
        return f"read {inputs.sessions_read} sessions from the PostgreSQL store"
    if source.startswith(("redis://", "rediss://", "unix://")):
        return f"read {inputs.sessions_read} sessions from the live window in Redis"
    return (
        f"read {inputs.files} files, {inputs.sessions_read} sessions ({inputs.duplicate_sessions} repeated, "
        f"{inputs.skipped_lines} lines skipped)"
    )


def render_text(report: BiasReport, console: Console, *, verbose: bool = False) -> None:
    inputs = report.inputs
    window = f"last {report.window_sessions or 'all'} sessions" + (
        f" within {report.window_days:g} days" if report.window_days else ""
    )
    console.print(f"[bold]bias-audit report[/bold]  {window}; {what_was_read(inputs)}", highlight=False)
    if not report.tenants:
        console.print("no sessions in the window", style="yellow")
    for tenant in report.tenants:
        parts: list[RenderableType] = [_header(tenant), _metrics(tenant), _reviewers(tenant), _models(tenant)]
        council = _council(tenant, everything=verbose)
        if council is not None:
            parts.append(council)
        if verbose:
            parts.extend(_verbose(tenant))
        console.print(Panel(Group(*parts), expand=False))
    for history in report.rolled_up:
        console.print(_rolled_up(history))
    if report.detector_precision:
        console.print(_precision(report))
    if report.detector_quality:
        console.print(_quality(report))
    if report.group_disparity:
        console.print(_disparity(report))
    for section in report.judges:
        from .judges import render_judges_text

        console.print(f"[bold]Judges of tenant {escape(section.tenant_id)}[/bold]", highlight=False)
        console.print(Text(render_judges_text(section.report)))


def _precision(report: BiasReport) -> Table:
    """What people's reviews say: each detector's share of confirmed flags, and the evidence
    most often dismissed (a term or rule to look at)."""
    table = Table(title="Detector precision from reviews (confirmed / reviewed, Wilson 95% CI)", title_justify="left")
    for column in ("tenant", "bias type", "analyzer", "reviewed", "precision (95% CI)"):
        table.add_column(column, justify="right" if column in ("reviewed", "precision (95% CI)") else "left")
    for entry in report.detector_precision:
        table.add_row(
            plain(entry.tenant_id),
            plain(entry.bias_type),
            plain(entry.analyzer),
            str(entry.reviewed),
            f"{entry.precision:.0%} ({entry.ci_lower:.0%}-{entry.ci_upper:.0%})",
        )
    if report.most_dismissed:
        table.caption = "most dismissed: " + "; ".join(
            f"{visible(d.evidence)} ({d.bias_type}, {d.dismissed} dismissed, {d.confirmed} confirmed)"
            for d in report.most_dismissed[:5]
        )
    return table


def _share(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0%}" + (f" ({ci[0]:.0%}-{ci[1]:.0%})" if ci else "")


def _quality(report: BiasReport) -> Table:
    """The flags' precision and recall estimated from reviews (recall needs reviews of the sampled
    unflagged answers)."""
    table = Table(
        title="Detector quality from reviews: precision of the flags, recall with the sampled unflagged "
        "answers (95% CI)",
        title_justify="left",
    )
    for column in ("tenant", "bias type", "flagged", "precision", "reviews", "recall", "sampled reviews"):
        table.add_column(column, justify="left" if column in ("tenant", "bias type") else "right")
    for e in report.detector_quality:
        table.add_row(
            plain(e.tenant_id),
            plain(e.bias_type),
            f"{e.flagged:,}",
            _share(e.precision, e.precision_ci),
            str(e.precision_reviews),
            _share(e.recall, e.recall_ci),
            str(e.sampled_reviews),
        )
    table.caption = (
        "reviews are labelled examples too: `bias-audit learn --store URL` measures whether a detector "
        "learned from them beats these flags"
    )
    return table


def _rolled_up(history: RolledUpHistory) -> Table:
    """A tenant's rows retention rolled up: counts and means only (the window's statistics need
    the scored cells, which are gone)."""
    table = Table(
        title=Text.assemble(
            plain(history.tenant_id),
            f": rolled up by retention, {history.first_day} to "
            f"{history.last_day} ({history.days} day{'' if history.days == 1 else 's'})",
        ),
        title_justify="left",
    )
    for column in ("source", "model", "reviewer", "bias type", "items", "flagged", "mean"):
        table.add_column(column, justify="right" if column in ("items", "flagged", "mean") else "left")
    for total in history.totals:
        table.add_row(
            total.source,
            plain(total.model or "-"),
            plain(total.reviewer or "-"),
            plain(total.bias_type or "-"),
            f"{total.items:,}",
            f"{total.flagged:,}",
            "-" if total.mean is None else f"{total.mean:.2f}",
        )
    return table


def _gap(metric: str, gap: Any) -> str:
    if metric == "length_ratio":
        text = f"{gap.estimate:.2f}x ({gap.ci_lower:.2f}-{gap.ci_upper:.2f})"
    elif metric == "sentiment_gap":
        text = f"{gap.estimate:+.2f} ({gap.ci_lower:+.2f} to {gap.ci_upper:+.2f})"
    else:
        text = f"{gap.estimate:+.1%} ({gap.ci_lower:+.1%} to {gap.ci_upper:+.1%})"
    return text + (" FLAG" if gap.flagged else "")


def _disparity(report: BiasReport) -> Table:
    """Live traffic: each group named in queries against the model's answers for the axis' other groups."""
    metrics = ("refusal_rate_gap", "sentiment_gap", "toxicity_gap", "length_ratio")
    table = Table(
        title="Group disparity over live traffic (unpaired; gap to the axis' other groups, 95% CI, "
        "flagged after Holm past the practical size)",
        title_justify="left",
    )
    for column in ("tenant", "model", "axis", "group", "answers", *metrics):
        table.add_column(column, justify="left" if column in ("tenant", "model", "axis", "group") else "right")
    for e in report.group_disparity:
        table.add_row(
            plain(e.tenant_id),
            plain(e.llm_model),
            plain(e.axis),
            plain(e.group),
            f"{e.answers:,}",
            *[_gap(m, getattr(e, m)) for m in metrics],
        )
    table.caption = report.group_disparity_note
    return table
