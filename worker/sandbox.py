"""`bias-audit sandbox`: a candidate model's (or prompt's) answers against a baseline, before it
ships. Both sides are `llm.responses` events audited in-process (the candidate's answers to the
historical prompts: the caller replays them, we never stored them), or the baseline is the store's
interaction audits of a tenant, model and time range. Answers pair by audit_id, else by
query_hash (consent 4); with pairs the paired tests are used.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import orjson

from bias_audit.analysis.sandbox import CORRECTION, Comparison, compare
from bias_audit.schemas.errors import CommandError

from .settings import Settings


@dataclass(frozen=True)
class Answer:
    audit_id: str
    query_hash: str | None
    flagged: frozenset[str]


def audited_file(path: Path, settings: Settings, what: str) -> list[Answer]:
    """Each LLM response event of the file, audited; a bad line is a CommandError naming it."""
    from bias_audit.consumers.envelope import Delivery

    from .composition import in_process_processor

    try:
        lines = [(n, line) for n, line in enumerate(path.read_bytes().splitlines(), 1) if line.strip()]
    except OSError as error:
        raise CommandError(f"{what}: cannot read {path}: {error.strerror or error}") from None
    if not lines:
        raise CommandError(f"{what}: {path} holds no events")
    consumer = in_process_processor(settings)
    deliveries = [Delivery(delivery_id=f"{what}-{n}", body=line, source_topic=settings.llm_topic) for n, line in lines]
    outcomes = asyncio.run(consumer.process(deliveries))
    answers = []
    for (number, _), outcome in zip(lines, outcomes):
        if outcome.dead_letter is not None:
            raise CommandError(f"{what}: {path} line {number}: {outcome.dead_letter.error}")
        if outcome.result is None:
            raise CommandError(f"{what}: {path} line {number}: a repeated audit_id (each answer once)")
        if outcome.result.source != "llm.response":
            raise CommandError(f"{what}: {path} line {number}: a council session; the sandbox compares LLM responses")
        answers.append(Answer(outcome.result.audit_id, None, frozenset(outcome.result.bias_type)))
    return answers


def stored_answers(
    connection: Any, *, tenant: str, model: str | None, since: datetime | None, until: datetime | None
) -> list[Answer]:
    """The tenant's stored interaction audits in the time range, as the sandbox's baseline."""
    from bias_audit.storage.postgres import read_interactions

    answers = []
    for record in read_interactions(connection, tenant=tenant, since=since):
        moment = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
        if (model is None or record["llm_model"] == model) and (until is None or moment < until):
            answers.append(Answer(record["audit_id"], record["query_hash"], frozenset(record["bias_type"])))
    if not answers:
        raise CommandError(
            f"baseline: no stored interaction audits for tenant {tenant!r}"
            + (f", model {model!r}" if model else "")
            + " in that time range"
        )
    return answers


def pairs_of(baseline: list[Answer], candidate: list[Answer]) -> list[tuple[int, int]]:
    """(baseline, candidate) indexes of the same prompt: by audit_id, else by query_hash."""
    by_id = {a.audit_id: i for i, a in enumerate(baseline)}
    by_hash = {a.query_hash: i for i, a in enumerate(baseline) if a.query_hash}
    pairs = []
    for j, answer in enumerate(candidate):
        i = by_id.get(answer.audit_id)
        if i is None and answer.query_hash:
            i = by_hash.get(answer.query_hash)
        if i is not None:
            pairs.append((i, j))
    return pairs


def sandbox_document(baseline: list[Answer], candidate: list[Answer]) -> dict[str, Any]:
    pairs = pairs_of(baseline, candidate)
    # paired only when every candidate answer has its baseline: a partial match would test a subset
    paired = pairs if len(pairs) == len(candidate) and len({i for i, _ in pairs}) == len(pairs) else None
    comparisons = compare([a.flagged for a in baseline], [a.flagged for a in candidate], paired)
    return {
        "baseline": {"n": len(baseline)},
        "candidate": {"n": len(candidate)},
        "bias_types": [asdict(c) for c in comparisons],
        "correction": f"{CORRECTION} (p_value adjusted over the {len(comparisons)} bias types)",
        "pairs": len(paired) if paired else 0,
    }


def worse(document: dict[str, Any]) -> bool:
    return any(entry["verdict"] == "worse" for entry in document["bias_types"])


def write(document: dict[str, Any], format: str, out: IO[str]) -> None:
    write_document(document, format, out, html=_html, text=_text)


def write_document(
    document: dict[str, Any],
    format: str,
    out: IO[str],
    *,
    html: Callable[[dict[str, Any]], str],
    text: Callable[[dict[str, Any], IO[str]], None],
) -> None:
    """A command's document as indented JSON, a self-contained HTML page or rich text."""
    if format == "json":
        out.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif format == "html":
        out.write(html(document))
    else:
        text(document, out)


def _text(document: dict[str, Any], out: IO[str]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from bias_audit.schemas.safe_text import visible

    # piped or written to a file: wide enough that a bias type's name stays on one line
    console = Console(file=out, highlight=False, width=None if out.isatty() else 120)
    mode = f"paired on {document['pairs']} prompts" if document["pairs"] else "unpaired"
    table = Table(
        title=f"sandbox: candidate ({document['candidate']['n']} answers) vs baseline "
        f"({document['baseline']['n']}), {mode}, {document['correction']}",
        title_justify="left",
    )
    for column in ("bias type", "baseline", "candidate", "difference (95% CI)", "p", "verdict"):
        table.add_column(column, justify="left" if column in ("bias type", "verdict") else "right")
    for entry in document["bias_types"]:
        style = {"worse": "red", "better": "green"}.get(entry["verdict"], "")
        table.add_row(
            Text(visible(entry["bias_type"])),
            f"{entry['baseline_rate']:.1%}",
            f"{entry['candidate_rate']:.1%}",
            f"{entry['difference']:+.1%} ({entry['ci_lower']:+.1%} to {entry['ci_upper']:+.1%})",
            f"{entry['p_value']:.3g}",
            Text(entry["verdict"], style=style),
        )
    console.print(table)
    if not document["bias_types"]:
        console.print("neither side was flagged for any bias type")


def _html(document: dict[str, Any]) -> str:
    """A self-contained page: a row per bias type with both rates as bars and the CI drawn."""
    rows = []
    for entry in document["bias_types"]:

        def bar(rate: float, colour: str) -> str:
            return f'<div style="background:{colour};height:10px;width:{rate * 300:.1f}px"></div>'

        lo, hi = (entry["ci_lower"] + 1) * 150, (entry["ci_upper"] + 1) * 150
        ci = (
            f'<svg width="300" height="14" role="img" aria-label="95% CI of the difference">'
            f'<line x1="150" y1="0" x2="150" y2="14" stroke="#999"/>'
            f'<line x1="{lo:.1f}" y1="7" x2="{hi:.1f}" y2="7" stroke="#333" stroke-width="2"/>'
            f'<circle cx="{(entry["difference"] + 1) * 150:.1f}" cy="7" r="3"/></svg>'
        )
        colour = {"worse": "#a3262a", "better": "#1d7a46"}.get(entry["verdict"], "#333")
        rows.append(
            f"<tr><td>{html.escape(entry['bias_type'])}</td><td>{entry['baseline_rate']:.1%}"
            f"{bar(entry['baseline_rate'], '#8aa2d8')}</td><td>{entry['candidate_rate']:.1%}"
            f"{bar(entry['candidate_rate'], '#d8a28a')}</td><td>{entry['difference']:+.1%} "
            f"({entry['ci_lower']:+.1%} to {entry['ci_upper']:+.1%}){ci}</td><td>{entry['p_value']:.3g}</td>"
            f'<td style="color:{colour};font-weight:600">{entry["verdict"]}</td></tr>'
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bias-audit sandbox</title>'
        "<style>body{font:15px system-ui,sans-serif;margin:2rem}td,th{padding:.4rem .8rem;text-align:left;"
        "vertical-align:top;border-bottom:1px solid #ddd}</style></head><body>"
        f"<h1>Sandbox: candidate vs baseline</h1><p>{document['candidate']['n']} candidate answers, "
        f"{document['baseline']['n']} baseline answers, "
        f"{'paired on ' + str(document['pairs']) + ' prompts' if document['pairs'] else 'unpaired'}; "
        f"{html.escape(document['correction'])}.</p><table><tr><th>bias type</th><th>baseline</th>"
        "<th>candidate</th><th>difference (95% CI)</th><th>p</th><th>verdict</th></tr>"
        + "".join(rows)
        + "</table></body></html>\n"
    )


__all__ = ["Answer", "Comparison", "audited_file", "stored_answers", "sandbox_document", "worse", "write"]
