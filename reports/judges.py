"""The judge report's document (contracts.md "Judge report": names fixed) and its text, CSV and
HTML renderings. Judges that compare answers get one table, judges that grade one answer alone
another; the HTML page adds the two plots a person would rather look at (first-position rate
and length preference, each with its CI). A metric may have an estimate and no interval (a
sample of one): every rendering shows it so."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import datetime, timezone
from html import escape
from typing import Any

from bias_audit.analysis.judges import METRIC_NAMES, JudgeReport
from bias_audit.schemas.safe_text import plural

from .budget import UNLIMITED, Budget
from .csv_out import neutralized
from .svg import forest_plot

SCHEMA_VERSION = "1.0"
CHECK_EVERY = 5_000  # verdicts read between looks at the time budget
PERCENT = ("accuracy",)  # contract: accuracy and win rates in percent, the other rates as shares
SCORE_DISTRIBUTION = ("mean", "sd", "min", "max", "ceiling_share", "floor_share")
GRADING_LEGEND = (
    "At top / at bottom: the share of scores at the ends of the scale the source names. Score ~ words: "
    "Spearman's rho between a score and its answer's length; it mixes length with quality (longer answers "
    "may also be better ones). Repeats agree: the same answer judged again scored within a point."
)
LEGEND = (
    "Estimate [95% CI], N in the JSON; FLAG: the practical size and p < 0.05 after Holm's correction across the "
    "judge's tests. Pref. fairness (Shi et al. 2024): (recency - primacy) / pairs seen in both orders, 0 fair, "
    "below 0 favours the answer shown first. Consistency: pairs whose verdict survives the swap."
)


def _prompted(entry: dict[str, Any], judge: str, prompt: str | None) -> dict[str, Any]:
    """judge and, where the source names one, judge_prompt (contracts.md)."""
    entry["judge"] = judge
    if prompt is not None:
        entry["judge_prompt"] = prompt
    return entry


def judge_document(report: JudgeReport, *, sources: list[str], duplicates: int = 0) -> dict[str, Any]:
    judges = []
    for s in report.judges:
        entry = _prompted({}, s.judge, s.prompt)
        for name in METRIC_NAMES:
            entry[name] = s.metrics[name].document(2 if name in PERCENT else 4)
        entry["score_distribution"] = None if s.score_distribution is None else s.score_distribution.document()
        entry["n_verdicts"] = s.n_verdicts
        entry["single_answer_verdicts"] = s.single_answer_verdicts
        entry["n_items"] = s.n_items
        entry["flagged"] = s.flagged
        entry["both_orders_share"] = None if s.both_orders_share is None else round(s.both_orders_share, 4)
        entry["notes"] = list(s.notes)
        entry["disagreements"] = [
            {
                "item_id": d.item,
                "judge_verdict": d.judge_verdict,
                "human_verdict": d.human_verdict,
                "distance": d.distance,
            }
            for d in s.disagreements
        ]
        judges.append(entry)
    models: dict[tuple[str, str, str], dict[str, Any]] = {}
    for w in report.models:
        models[(w.judge, w.prompt or "", w.model)] = _prompted({}, w.judge, w.prompt) | dict(
            model=w.model,
            win_rate=round(w.win_rate, 4),
            ci_lower=round(w.ci_lower, 4),
            ci_upper=round(w.ci_upper, 4),
            n=w.n,
            length_controlled_win_rate=None if w.length_controlled is None else round(w.length_controlled, 4),
        )
    for m in report.mean_scores:
        row = models.setdefault(
            (m.judge, m.prompt or "", m.model), _prompted({}, m.judge, m.prompt) | {"model": m.model}
        )
        row["mean_score"] = m.mean_score.document(4)
    agreement = None
    if report.agreement is not None:
        a = report.agreement
        agreement = {
            "krippendorff_alpha": None if a.alpha is None else round(a.alpha, 4),
            "units": a.units,
            "judges": a.judges,
            "alpha_without": [
                _prompted({}, *key) | {"alpha": None if value is None else round(value, 4)}
                for key, value in a.alpha_without.items()
            ],
            "departs": None if a.departs is None else _prompted({}, *a.departs),
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "sources": sources,
        "duplicates_dropped": duplicates,
        "judges": judges,
        "models": [models[key] for key in sorted(models)],
        "agreement": agreement,
    }


def _name(entry: dict[str, Any]) -> str:
    return entry["judge"] + (f" [{entry['judge_prompt']}]" if entry.get("judge_prompt") else "")


def compares(entry: dict[str, Any]) -> bool:
    """Whether the judge compared answers (else it only graded answers alone)."""
    return entry["n_verdicts"] > entry["single_answer_verdicts"]


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _parts(metric: dict[str, Any] | None, percent: bool) -> tuple[str, str, bool] | None:
    """(estimate, "[low, high]", flagged) as shown; "[no CI, n=1]" where the sample gives an
    estimate and no interval; None without an estimate."""
    if metric is None or metric["estimate"] is None:
        return None
    digits = 1 if percent else 2
    low, high = metric["ci_lower"], metric["ci_upper"]
    interval = f"[no CI, n={metric['n']}]" if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]"
    return f"{metric['estimate']:.{digits}f}", interval, bool(metric.get("flagged"))


def cell(metric: dict[str, Any] | None, percent: bool = False) -> str:
    """estimate [low, high] (+ FLAG), or "-"."""
    parts = _parts(metric, percent)
    if parts is None:
        return "-"
    estimate, interval, flagged = parts
    return f"{estimate} {interval}" + (" FLAG" if flagged else "")


TABLE_COLUMNS = (
    ("first_position_rate", "first shown"),
    ("position_consistency", "consistency"),
    ("preference_fairness", "pref. fairness"),
    ("length_preference", "longer"),
    ("accuracy", "accuracy %"),
    ("self_preference", "self-pref."),
    ("human_agreement", "kappa"),
    ("tie_rate", "ties"),
    ("failed_rate", "failed"),
    ("repeat_consistency", "repeats agree"),
)
GRADING_HEADERS = (
    "judge",
    "verdicts",
    "failed",
    "mean score [sd]",
    "range",
    "at top",
    "at bottom",
    "score ~ words (rho)",
    "repeats agree",
)


def _grading_row(entry: dict[str, Any]) -> list[str | dict[str, Any]]:
    """The single-answer table's cells: text, or a metric (rendered by each format's own cell)."""
    d = entry["score_distribution"]
    spread = "-" if d is None else f"{d['mean']:.2f} [{_number(d['sd'], 2)}]"
    return [
        _name(entry),
        f"{entry['single_answer_verdicts']:,}",
        entry["failed_rate"],
        spread,
        "-" if d is None else f"{d['min']:g} to {d['max']:g}",
        "-" if d is None else f"{d['ceiling_share']:.2f}",
        "-" if d is None else f"{d['floor_share']:.2f}",
        entry["score_length_correlation"],
        entry["repeat_consistency"],
    ]


def _model_rows(document: dict[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    """(win rates, mean scores) as table rows."""
    wins, means = [], []
    for row in document["models"]:
        if row.get("win_rate") is not None:
            wins.append(
                [
                    _name(row),
                    row["model"],
                    f"{row['win_rate']:.2f}",
                    f"[{row['ci_lower']:.2f}, {row['ci_upper']:.2f}]",
                    _number(row["length_controlled_win_rate"], 2),
                    f"{row['n']:,}",
                ]
            )
        if row.get("mean_score") is not None:
            means.append([_name(row), row["model"], cell(row["mean_score"]), f"{row['mean_score']['n']:,}"])
    return wins, means


def _footer(document: dict[str, Any]) -> list[str]:
    lines = []
    agreement = document.get("agreement")
    if agreement and agreement["krippendorff_alpha"] is not None:
        line = (
            f"Agreement between judges: Krippendorff's alpha {agreement['krippendorff_alpha']:.3f} over "
            f"{plural(agreement['units'], 'shared item')} ({plural(agreement['judges'], 'judge')} sharing items)"
        )
        if agreement["departs"]:
            line += f"; departs most: {_name(agreement['departs'])}"
        lines.append(line)
    if document.get("duplicates_dropped"):
        lines.append(
            f"{plural(document['duplicates_dropped'], 'verdict')} read twice (the same id and content) counted once"
        )
    return lines


WIDE = 200  # the judges' tables have a column per metric: narrower terminals get a table per judge


def render_judges_text(document: dict[str, Any], width: int | None = None) -> str:
    """The report as text `width` columns wide (None: wide, for files): a column per metric when
    there is room, else one table per judge with a row per metric."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, width=width or 220, color_system=None, soft_wrap=False)
    if not document["judges"]:
        return "No judge verdicts in the input.\n"
    wide = width is None or width >= WIDE

    def table(title: str, headers: tuple[str, ...] | list[str], rows: list[list[str]]) -> None:
        out = Table(title=Text(title), title_justify="left")  # a judge name may hold [brackets]
        for i, header in enumerate(headers):
            out.add_column(header, justify="left" if i < 2 else "right", no_wrap=i == 0)
        for row in rows:
            out.add_row(*(Text(c) for c in row))
        console.print(out)

    def per_judge(title: str, headers: tuple[str, ...] | list[str], rows: list[list[str]]) -> None:
        console.print(Text(title))
        for row in rows:
            table(row[0], ("metric", "estimate [95% CI]"), [[h, c] for h, c in zip(headers[1:], row[1:])])

    comparing = [e for e in document["judges"] if compares(e)]
    if comparing:
        (table if wide else per_judge)(
            "Judges comparing answers",
            ["judge", "verdicts", *(h for _, h in TABLE_COLUMNS)],
            [
                [_name(e), f"{e['n_verdicts']:,}", *(cell(e[name], name in PERCENT) for name, _ in TABLE_COLUMNS)]
                for e in comparing
            ],
        )
        console.print(Text(LEGEND))
    grading = [e for e in document["judges"] if e["single_answer_verdicts"]]
    if grading:
        (table if wide else per_judge)(
            "Judges grading one answer alone",
            GRADING_HEADERS,
            [[c if isinstance(c, str) else cell(c) for c in _grading_row(e)] for e in grading],
        )
        console.print(Text(GRADING_LEGEND))
    for line in _judge_notes(document):
        console.print(Text(line))
    wins, means = _model_rows(document)
    if wins:
        table(
            "Win rate against the baseline (percent, ties 0.5; length-controlled: at equal lengths)",
            ("judge", "model", "win rate", "95% CI", "length-controlled", "n"),
            wins,
        )
    if means:
        table(
            "Mean score per model (scores the judge gave; failed gradings left out)",
            ("judge", "model", "mean score [95% CI]", "n"),
            means,
        )
    for line in _footer(document):
        console.print(Text(line))
    return buffer.getvalue()


def _judge_notes(document: dict[str, Any]) -> list[str]:
    """Each judge's notes, then the items where it and the people disagree."""
    lines = []
    for entry in document["judges"]:
        lines += [f"{_name(entry)}: {note}" for note in entry["notes"]]
        lines += [
            f"{_name(entry)}: item {d['item_id']}: judge {d['judge_verdict']}, humans {d['human_verdict']}"
            for d in entry["disagreements"]
        ]
    return lines


CSV_COLUMNS = (
    "judge",
    "judge_prompt",
    "metric",
    "model",
    "estimate",
    "ci_lower",
    "ci_upper",
    "n",
    "p_value",
    "flagged",
)


def render_judges_csv(document: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)

    def write(
        row: dict[str, Any],
        metric: str,
        model: str | None,
        estimate: Any,
        low: Any = None,
        high: Any = None,
        n: Any = None,
        p: Any = None,
        flagged: Any = None,
    ) -> None:
        writer.writerow(
            [
                neutralized(c)
                for c in (row["judge"], row.get("judge_prompt"), metric, model, estimate, low, high, n, p, flagged)
            ]
        )

    for entry in document["judges"]:
        for name in METRIC_NAMES:
            m = entry[name]
            write(
                entry,
                name,
                None,
                m["estimate"],
                m["ci_lower"],
                m["ci_upper"],
                m["n"],
                m.get("p_value"),
                m.get("flagged"),
            )
        d = entry.get("score_distribution")
        if d is not None:
            for name in SCORE_DISTRIBUTION:
                write(entry, f"score_{name}", None, d[name], n=d["n"])
    for row in document["models"]:
        if row.get("win_rate") is not None:
            write(row, "win_rate", row["model"], row["win_rate"], row["ci_lower"], row["ci_upper"], row["n"])
            if row["length_controlled_win_rate"] is not None:
                write(row, "length_controlled_win_rate", row["model"], row["length_controlled_win_rate"], n=row["n"])
        if row.get("mean_score") is not None:
            m = row["mean_score"]
            write(row, "mean_score", row["model"], m["estimate"], m["ci_lower"], m["ci_upper"], m["n"])
    return out.getvalue()


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:1200px;color:#0f172a;padding:0 16px}
h1{font-size:24px}h2{font-size:20px;border-bottom:2px solid #e2e8f0;padding-bottom:4px;margin-top:28px}
.meta{color:#475569}table{border-collapse:collapse;margin:10px 0}td,th{border-bottom:1px solid #e2e8f0;padding:4px 8px;
text-align:left}th{background:#f8fafc}.num{text-align:right;font-variant-numeric:tabular-nums}
.flag{color:#b91c1c;font-weight:700}tr.flagged td:first-child{border-left:4px solid #dc2626}
.charts{display:flex;flex-wrap:wrap;gap:18px}.chart{border:1px solid #e2e8f0;border-radius:6px;padding:10px}
.note{color:#92400e}.legend{color:#475569;font-size:14px;max-width:900px}
"""


def _html_cell(metric: dict[str, Any] | str | None, percent: bool = False) -> str:
    if isinstance(metric, str):
        return f"<td class=num>{escape(metric)}</td>"
    parts = _parts(metric, percent)
    if parts is None:
        return "<td class=num>-</td>"
    estimate, interval, flagged = parts
    flag = ' <span class="flag">FLAG</span>' if flagged else ""
    return f"<td class=num>{estimate} <small>{interval}</small>{flag}</td>"


def _plot(judges: list[dict[str, Any]], name: str, title: str, unit: str) -> str:
    rows = [
        (_name(e), e[name]["estimate"], e[name]["ci_lower"], e[name]["ci_upper"], bool(e[name].get("flagged")))
        for e in judges
        if e[name]["estimate"] is not None
    ]
    chart = forest_plot(
        rows,
        title=title,
        unit=unit,
        reference=0.5,
        band=0.05,
        domain=(0.0, 1.0),
        band_label="within 0.05 of 0.50: too small to matter (never flagged)",
    )
    return f"<div class=chart>{chart}</div>" if rows else ""


def _html_table(headers: tuple[str, ...] | list[str], rows: list[str]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _html_rows(rows: list[list[str]]) -> list[str]:
    """A model table's rows: the judge and model as text, the figures as numbers."""
    return [
        "<tr>"
        + "".join(f"<td class=num>{escape(c)}</td>" if i >= 2 else f"<td>{escape(c)}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    ]


def _judge_rows(judges: list[dict[str, Any]], cells: Callable[[dict[str, Any]], str]) -> list[str]:
    rows = []
    for entry in judges:
        cls = ' class="flagged"' if entry["flagged"] else ""
        notes = "".join(f"<div class=note>{escape(n)}</div>" for n in entry["notes"])
        rows.append(f"<tr{cls}><td>{escape(_name(entry))}{notes}</td>{cells(entry)}</tr>")
    return rows


def judges_html_body(document: dict[str, Any]) -> str:
    """The page's content without the page: the report's judges section embeds it."""
    if not document["judges"]:
        return "<p>No judge verdicts in the input.</p>"
    parts = []
    comparing = [e for e in document["judges"] if compares(e)]
    if comparing:
        rows = _judge_rows(
            comparing,
            lambda e: (
                f"<td class=num>{e['n_verdicts']:,}</td>"
                + "".join(_html_cell(e[name], name in PERCENT) for name, _ in TABLE_COLUMNS)
            ),
        )
        parts.append(
            "<h2>Judges comparing answers</h2>"
            + _html_table(["judge", "verdicts", *(h for _, h in TABLE_COLUMNS)], rows)
            + f"<p class=legend>{escape(LEGEND)}</p><div class=charts>"
            + _plot(
                comparing,
                "first_position_rate",
                "First-position rate per judge",
                "share of decisive verdicts preferring the answer shown first",
            )
            + _plot(
                comparing,
                "length_preference",
                "Length preference per judge",
                "share of decisive verdicts preferring the longer answer",
            )
            + "</div>"
        )
    grading = [e for e in document["judges"] if e["single_answer_verdicts"]]
    if grading:
        rows = _judge_rows(grading, lambda e: "".join(_html_cell(c) for c in _grading_row(e)[1:]))
        parts.append(
            "<h2>Judges grading one answer alone</h2>"
            + _html_table(GRADING_HEADERS, rows)
            + f"<p class=legend>{escape(GRADING_LEGEND)}</p>"
        )
    wins, means = _model_rows(document)
    if wins:
        parts.append(
            "<h2>Win rates against the baseline</h2>"
            + _html_table(("judge", "model", "win rate %", "95% CI", "length-controlled %", "n"), _html_rows(wins))
        )
    if means:
        parts.append(
            "<h2>Mean score per model</h2>"
            + _html_table(("judge", "model", "mean score [95% CI]", "n"), _html_rows(means))
        )
    footer = _footer(document)
    if footer:
        parts.append("<h2>Agreement and input</h2>" + "".join(f"<p>{escape(line)}.</p>" for line in footer))
    return "".join(parts)


def render_judges_html(document: dict[str, Any]) -> str:
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>Judge report</title><style>{STYLE}</style></head><body><h1>LLM judge report</h1>"
        f"<p class=meta>Generated {escape(document['generated_at'])} from {escape(', '.join(document['sources']))}. "
        "Every estimate with its 95% CI; a flag needs a practical size (0.05 from neutral, kappa under 0.4, a "
        "score-length rho of 0.3) and p &lt; 0.05 after Holm's correction. Flagged judges first.</p>"
        f"{judges_html_body(document)}</body></html>"
    )


def render_judges(document: dict[str, Any], format: str, width: int | None = None) -> str:
    import orjson

    if format == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
    if format == "csv":
        return render_judges_csv(document)
    if format == "html":
        return render_judges_html(document)
    return render_judges_text(document, width)


def judge_report_over_store(url: str, tenant: str | None, budget: Budget = UNLIMITED) -> dict[str, Any]:
    """The judge report's document over the stored verdicts (one tenant's, or all); its `judges`
    are empty when there are none. OutOfTime when `budget` is spent, read or analysis."""
    from bias_audit.analysis.judge_games import game_from_event
    from bias_audit.analysis.judges import judge_report
    from bias_audit.schemas.safe_text import redact
    from bias_audit.storage.postgres.verdicts import read_verdicts

    games = []
    with budget.connection(url) as connection:
        for event in read_verdicts(connection, tenant=tenant):
            games.append(game_from_event(event))
            if len(games) % CHECK_EVERY == 0:
                budget.check()
    return judge_document(judge_report(games, checkpoint=budget.check), sources=[redact(url)])
