"""The judge report's document (contracts.md "Judge report": names fixed) and its text, CSV and
HTML renderings. The HTML page: one row per judge, the flagged ones first, and the two plots a
person would rather look at (first-position rate and length preference, each with its CI)."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone
from html import escape
from typing import Any

from bias_audit.analysis.judges import METRIC_NAMES, JudgeReport

from .csv_out import neutralized
from .svg import forest_plot

SCHEMA_VERSION = "1.0"
PERCENT = ("accuracy",)  # contract: accuracy and win rates in percent, the other rates as shares


def judge_document(report: JudgeReport, *, sources: list[str]) -> dict[str, Any]:
    judges = []
    for s in report.judges:
        entry: dict[str, Any] = {"judge": s.judge}
        if s.prompt is not None:
            entry["judge_prompt"] = s.prompt
        for name in METRIC_NAMES:
            entry[name] = s.metrics[name].document(2 if name in PERCENT else 4)
        entry["n_verdicts"] = s.n_verdicts
        entry["n_items"] = s.n_items
        entry["flagged"] = s.flagged
        entry["both_orders_share"] = None if s.both_orders_share is None else round(s.both_orders_share, 4)
        entry["notes"] = list(s.notes)
        entry["disagreements"] = [{"item_id": d.item, "judge_verdict": d.judge_verdict,
                                   "human_verdict": d.human_verdict, "distance": d.distance} for d in s.disagreements]
        judges.append(entry)
    models = []
    for w in report.models:
        row: dict[str, Any] = {"judge": w.judge}
        if w.prompt is not None:
            row["judge_prompt"] = w.prompt
        row.update(model=w.model, win_rate=round(w.win_rate, 4), ci_lower=round(w.ci_lower, 4),
                   ci_upper=round(w.ci_upper, 4), n=w.n,
                   length_controlled_win_rate=None if w.length_controlled is None else round(w.length_controlled, 4))
        models.append(row)
    agreement = None
    if report.agreement is not None:
        a = report.agreement
        agreement = {
            "krippendorff_alpha": None if a.alpha is None else round(a.alpha, 4), "units": a.units, "judges": a.judges,
            "alpha_without": [{"judge": key[0], "judge_prompt": key[1],
                               "alpha": None if value is None else round(value, 4)}
                              for key, value in a.alpha_without.items()],
            "departs": None if a.departs is None else {"judge": a.departs[0], "judge_prompt": a.departs[1]},
        }
    return {"schema_version": SCHEMA_VERSION,
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "sources": sources, "judges": judges, "models": models, "agreement": agreement}


def _name(entry: dict[str, Any]) -> str:
    return entry["judge"] + (f" [{entry['judge_prompt']}]" if entry.get("judge_prompt") else "")


def _cell(metric: dict[str, Any], percent: bool = False) -> str:
    if metric["estimate"] is None:
        return "-"
    digits = 1 if percent else 2
    text = f"{metric['estimate']:.{digits}f} [{metric['ci_lower']:.{digits}f}, {metric['ci_upper']:.{digits}f}]"
    return text + (" FLAG" if metric.get("flagged") else "")


TABLE_COLUMNS = (("first_position_rate", "first pos."), ("position_consistency", "consistency"),
                 ("preference_fairness", "PF"), ("length_preference", "longer"), ("accuracy", "accuracy %"),
                 ("self_preference", "self-pref."), ("human_agreement", "kappa"), ("tie_rate", "ties"))


def render_judges_text(document: dict[str, Any]) -> str:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None, soft_wrap=False)
    if not document["judges"]:
        return "No judge verdicts in the input.\n"
    table = Table(title="Judges (estimate [95% CI]; FLAG: practical size and p < 0.05 after Holm)")
    table.add_column("judge")
    table.add_column("verdicts", justify="right")
    for _, header in TABLE_COLUMNS:
        table.add_column(header, justify="right")
    for entry in document["judges"]:
        table.add_row(Text(_name(entry)), str(entry["n_verdicts"]),
                      *(Text(_cell(entry[name], name in PERCENT)) for name, _ in TABLE_COLUMNS))
    console.print(table)
    for entry in document["judges"]:
        for note in entry["notes"]:
            console.print(Text(f"{_name(entry)}: {note}"))
        for d in entry["disagreements"]:
            console.print(Text(f"{_name(entry)}: item {d['item_id']}: judge {d['judge_verdict']}, "
                               f"humans {d['human_verdict']}"))
    if document["models"]:
        wins = Table(title="Win rate against the baseline (percent, ties 0.5; length-controlled: at equal lengths)")
        for header in ("judge", "model", "win rate", "95% CI", "length-controlled", "n"):
            wins.add_column(header)
        for row in document["models"]:
            controlled = row["length_controlled_win_rate"]
            wins.add_row(Text(_name(row)), Text(row["model"]), f"{row['win_rate']:.2f}",
                         f"[{row['ci_lower']:.2f}, {row['ci_upper']:.2f}]",
                         "-" if controlled is None else f"{controlled:.2f}", str(row["n"]))
        console.print(wins)
    agreement = document.get("agreement")
    if agreement and agreement["krippendorff_alpha"] is not None:
        line = f"Agreement between judges: Krippendorff's alpha {agreement['krippendorff_alpha']:.3f} over " \
               f"{agreement['units']} shared items"
        if agreement["departs"]:
            line += f"; departs most: {_name(agreement['departs'])}"
        console.print(Text(line))
    return buffer.getvalue()


CSV_COLUMNS = ("judge", "judge_prompt", "metric", "model", "estimate", "ci_lower", "ci_upper", "n", "p_value", "flagged")


def render_judges_csv(document: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for entry in document["judges"]:
        for name in METRIC_NAMES:
            m = entry[name]
            writer.writerow([neutralized(c) for c in (entry["judge"], entry.get("judge_prompt"), name, None,
                                                        m["estimate"], m["ci_lower"], m["ci_upper"], m["n"],
                                                        m.get("p_value"), m.get("flagged"))])
    for row in document["models"]:
        writer.writerow([neutralized(c) for c in (row["judge"], row.get("judge_prompt"), "win_rate", row["model"],
                                                    row["win_rate"], row["ci_lower"], row["ci_upper"], row["n"],
                                                    None, None)])
        if row["length_controlled_win_rate"] is not None:
            writer.writerow([neutralized(c) for c in (row["judge"], row.get("judge_prompt"), "length_controlled_win_rate",
                                                        row["model"], row["length_controlled_win_rate"], None, None,
                                                        row["n"], None, None)])
    return out.getvalue()


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:1200px;color:#0f172a;padding:0 16px}
h1{font-size:24px}h2{font-size:20px;border-bottom:2px solid #e2e8f0;padding-bottom:4px;margin-top:28px}
.meta{color:#475569}table{border-collapse:collapse;margin:10px 0}td,th{border-bottom:1px solid #e2e8f0;padding:4px 8px;
text-align:left}th{background:#f8fafc}.num{text-align:right;font-variant-numeric:tabular-nums}
.flag{color:#b91c1c;font-weight:700}tr.flagged td:first-child{border-left:4px solid #dc2626}
.charts{display:flex;flex-wrap:wrap;gap:18px}.chart{border:1px solid #e2e8f0;border-radius:6px;padding:10px}
.note{color:#92400e}
"""


def _html_cell(metric: dict[str, Any], percent: bool) -> str:
    if metric["estimate"] is None:
        return '<td class=num>-</td>'
    digits = 1 if percent else 2
    flag = ' <span class="flag">FLAG</span>' if metric.get("flagged") else ""
    return (f'<td class=num>{metric["estimate"]:.{digits}f} <small>[{metric["ci_lower"]:.{digits}f}, '
            f'{metric["ci_upper"]:.{digits}f}]</small>{flag}</td>')


def _plot(document: dict[str, Any], name: str, title: str, unit: str) -> str:
    rows = [(_name(e), e[name]["estimate"], e[name]["ci_lower"], e[name]["ci_upper"], bool(e[name].get("flagged")))
            for e in document["judges"] if e[name]["estimate"] is not None]
    return f'<div class=chart>{forest_plot(rows, title=title, unit=unit, reference=0.5, band=0.05)}</div>' if rows else ""


def judges_html_body(document: dict[str, Any]) -> str:
    """The page's content without the page: the report's judges section embeds it."""
    head = "".join(f"<th>{escape(header)}</th>" for header in ("judge", "verdicts", *(h for _, h in TABLE_COLUMNS)))
    rows = []
    for entry in document["judges"]:
        cls = ' class="flagged"' if entry["flagged"] else ""
        notes = "".join(f'<div class=note>{escape(n)}</div>' for n in entry["notes"])
        rows.append(f"<tr{cls}><td>{escape(_name(entry))}{notes}</td><td class=num>{entry['n_verdicts']}</td>"
                    + "".join(_html_cell(entry[name], name in PERCENT) for name, _ in TABLE_COLUMNS) + "</tr>")
    charts = (_plot(document, "first_position_rate", "First-position rate per judge", "share preferring the answer shown first")
              + _plot(document, "length_preference", "Length preference per judge", "share preferring the longer answer"))
    wins = ""
    if document["models"]:
        body = "".join(f"<tr><td>{escape(_name(r))}</td><td>{escape(r['model'])}</td><td class=num>{r['win_rate']:.2f}"
                       f"</td><td class=num>[{r['ci_lower']:.2f}, {r['ci_upper']:.2f}]</td><td class=num>"
                       f"{'-' if r['length_controlled_win_rate'] is None else format(r['length_controlled_win_rate'], '.2f')}"
                       f"</td><td class=num>{r['n']}</td></tr>" for r in document["models"])
        wins = ("<h2>Win rates against the baseline</h2><table><tr><th>judge</th><th>model</th><th>win rate %</th>"
                f"<th>95% CI</th><th>length-controlled %</th><th>n</th></tr>{body}</table>")
    agreement = ""
    a = document.get("agreement")
    if a and a["krippendorff_alpha"] is not None:
        departs = f"; departs most: {escape(_name(a['departs']))}" if a["departs"] else ""
        agreement = (f"<h2>Agreement between judges</h2><p>Krippendorff's alpha {a['krippendorff_alpha']:.3f} over "
                     f"{a['units']} shared items{departs}.</p>")
    table = (f"<table><tr>{head}</tr>{''.join(rows)}</table>" if rows else "<p>No judge verdicts in the input.</p>")
    return f"{table}<div class=charts>{charts}</div>{wins}{agreement}"


def render_judges_html(document: dict[str, Any]) -> str:
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>Judge report</title><style>{STYLE}</style></head><body><h1>LLM judge report</h1>"
            f"<p class=meta>Generated {escape(document['generated_at'])} from {escape(', '.join(document['sources']))}. "
            "Every estimate with its 95% CI; a flag needs a practical size (0.05 from neutral, kappa under 0.4) and "
            "p &lt; 0.05 after Holm's correction. Flagged judges first.</p>"
            f"{judges_html_body(document)}</body></html>")


def render_judges(document: dict[str, Any], format: str) -> str:
    import orjson

    if format == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
    if format == "csv":
        return render_judges_csv(document)
    if format == "html":
        return render_judges_html(document)
    return render_judges_text(document)


def judge_report_over_store(url: str, tenant: str | None) -> dict[str, Any]:
    """The judge report's document over the stored verdicts (one tenant's, or all); its `judges`
    are empty when there are none."""
    import psycopg

    from bias_audit.analysis.judge_games import game_from_event
    from bias_audit.analysis.judges import judge_report
    from bias_audit.schemas.safe_text import redact
    from bias_audit.storage.postgres.verdicts import read_verdicts

    with psycopg.connect(url, connect_timeout=5) as connection:
        games = [game_from_event(e) for e in read_verdicts(connection, tenant=tenant)]
    return judge_document(judge_report(games), sources=[redact(url)])
