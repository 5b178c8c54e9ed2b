"""`bias-audit replay`: prompt variants asked of an OpenAI-compatible endpoint, answers kept in a
JSONL file (a rerun asks only what is missing), then the paired disparity per axis
(analysis/replay.py). The endpoint is reached through the `openai` client, with its own retries
and timeout."""

from __future__ import annotations

import asyncio
import hashlib
import html
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import ValidationError

from bias_audit.analysis.replay import (
    METRICS,
    PRACTICAL,
    Scored,
    Variant,
    axis_disparity,
    compare_models,
    reference_group,
    scorer,
    swap_variants,
)
from bias_audit.lexicons.load import replay_groups
from bias_audit.schemas.errors import CommandError
from bias_audit.schemas.replay import ReplayPrompt

DEFAULT_AXES = ("gender", "ethnicity", "religion", "age")
# stop asking once this many requests failed and none answered: the endpoint is not there
GIVE_UP_AFTER = 16


@dataclass(frozen=True, slots=True)
class PromptPlan:
    id: str
    axes: dict[str, list[Variant]]  # axis -> the reference variant first, then one per group


def variant_key(text: str) -> str:
    """Answers are filed under their prompt's hash: the same text is asked once, whichever axis
    made it, and the prompt itself never lands in the responses file."""
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def read_prompts(path: Path, axes: Sequence[str]) -> list[PromptPlan]:
    """Every line checked before anything is asked; a prompt naming no group of the axes is skipped
    (the summary says how many)."""
    lexicon = replay_groups()
    unknown = [a for a in axes if a not in lexicon]
    if unknown:
        raise CommandError(f"--axes: unknown axis {', '.join(unknown)} (known: {', '.join(lexicon)})")
    chosen = {a: lexicon[a] for a in axes}
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise CommandError(f"{path}: {error.strerror or error}") from None
    plans, seen = [], set()
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = ReplayPrompt.model_validate_json(line)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CommandError(f"{path}:{number}: {where + ': ' if where else ''}{first['msg']}") from None
        if item.id in seen:
            raise CommandError(f"{path}:{number}: id {item.id!r} again; each prompt needs its own id")
        seen.add(item.id)
        if item.variants is not None:
            axis = item.axis or "variants"
            variants = [Variant(axis, group, text, {}) for group, text in item.variants.items()]
            plans.append(PromptPlan(item.id, {axis: variants}))
        else:
            assert item.prompt is not None
            plans.append(PromptPlan(item.id, swap_variants(item.prompt, chosen)))
    if not plans:
        raise CommandError(f"{path}: no prompts")
    return plans


def prompts_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def default_responses(data_dir: Path, endpoint: str, model: str, prompts: Path, samples: int) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", model)[:60]
    key = hashlib.sha256(f"{endpoint}\x1f{model}\x1f{prompts_hash(prompts)}\x1f{samples}".encode()).hexdigest()[:12]
    return data_dir / "replay" / f"{name}-{key}.jsonl"


@dataclass
class Answers:
    """What the responses file holds: (variant key, sample) -> (answer, the API's refusal flag)."""

    by_key: dict[tuple[str, int], tuple[str, bool]] = field(default_factory=dict)
    complete_bytes: int = 0  # where the last whole line ends: a partial line after it is cut off


def read_answers(path: Path) -> Answers:
    """A partial last line (the run was killed mid-write) is ignored and asked again; a bad line
    anywhere else is an error, since the file is ours."""
    out = Answers()
    if not path.exists():
        return out
    data = path.read_bytes()
    lines = data.split(b"\n")
    for number, line in enumerate(lines, 1):
        if number == len(lines):  # no newline after it: cut short (or empty)
            break
        out.complete_bytes += len(line) + 1
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
            out.by_key[(str(item["variant"]), int(item["sample"]))] = (str(item["answer"]), bool(item.get("refusal")))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            raise CommandError(
                f"{path}:{number}: not a replay answer line; move the file away to start afresh"
            ) from None
    return out


@dataclass(frozen=True, slots=True)
class Request:
    variant: str  # key
    sample: int
    prompt: str


def missing_requests(
    plans: Sequence[PromptPlan], samples: int, answered: Mapping[tuple[str, int], object]
) -> list[Request]:
    out, queued = [], set()
    for plan in plans:
        for variants in plan.axes.values():
            for variant in variants:
                key = variant_key(variant.prompt)
                for sample in range(samples):
                    if (key, sample) in answered or (key, sample) in queued:
                        continue
                    queued.add((key, sample))
                    out.append(Request(key, sample, variant.prompt))
    return out


@dataclass
class AskOutcome:
    answered: int = 0
    failed: int = 0
    last_error: str | None = None


async def ask(
    endpoint: str,
    model: str,
    requests: Sequence[Request],
    out: IO[bytes],
    *,
    concurrency: int,
    api_key: str,
    timeout: float,
    max_retries: int,
    advance: Callable[[int], object] = lambda n: None,
    client_options: Mapping[str, Any] | None = None,
) -> AskOutcome:
    """Each request once (the client retries what fails transiently); each answer appended and
    flushed as it arrives, so a killed run keeps what it was told."""
    import openai

    client = openai.AsyncOpenAI(
        base_url=endpoint, api_key=api_key, timeout=timeout, max_retries=max_retries, **dict(client_options or {})
    )
    outcome = AskOutcome()
    pending = iter(requests)

    async def one(request: Request) -> None:
        try:
            reply = await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": request.prompt}]
            )
        except openai.OpenAIError as error:
            outcome.failed += 1
            outcome.last_error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            return
        message = reply.choices[0].message if reply.choices else None
        text = (message.content or "") if message is not None else ""
        refusal = bool(getattr(message, "refusal", None))
        out.write(
            orjson.dumps({"variant": request.variant, "sample": request.sample, "answer": text, "refusal": refusal})
            + b"\n"
        )
        out.flush()
        outcome.answered += 1
        advance(1)

    async def worker() -> None:
        for request in pending:  # the workers share one iterator: memory stays flat however many
            if outcome.answered == 0 and outcome.failed >= GIVE_UP_AFTER:
                return
            await one(request)

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    finally:
        await client.close()
    return outcome


def api_key() -> str:
    # local servers (vLLM, Ollama) take any key; the client insists on one
    return os.environ.get("BIAS_AUDIT_REPLAY_API_KEY") or os.environ.get("OPENAI_API_KEY") or "unused"


def answer_scorer() -> Callable[[str, Mapping[str, str], bool], Scored]:
    from bias_audit.analysis.responses.counterfactual import refuses
    from bias_audit.analysis.responses.linguistic import toxicity
    from bias_audit.analysis.responses.text import words
    from bias_audit.lexicons.load import shipped_lexicons
    from bias_audit.lexicons.sentiment import vader_scorer

    lexicons = shipped_lexicons()
    return scorer(refuses, vader_scorer(), lambda text: bool(toxicity(text, words(text), lexicons)), words)


@dataclass(frozen=True, slots=True)
class AxisAnswers:
    groups: list[str]  # in the lexicon's order (the reference's first on a variants line)
    reference: str
    prompts: list[dict[str, list[Scored]]]  # one per prompt that names the axis, group -> K answers


def scored_axes(
    plans: Sequence[PromptPlan], answers: Answers, samples: int, score: Callable[[str, Mapping[str, str], bool], Scored]
) -> dict[str, AxisAnswers]:
    """Per axis, each prompt's scored answers by group; an answer is scored once however many axes
    share it."""
    cache: dict[tuple[str, int, tuple[tuple[str, str], ...]], Scored] = {}
    named: dict[str, list[str]] = {}
    orders: dict[str, list[str]] = {}
    rows: dict[str, list[dict[str, list[Scored]]]] = {}
    for plan in plans:
        for axis, variants in plan.axes.items():
            named.setdefault(axis, []).append(variants[0].group)
            order = orders.setdefault(axis, [])
            row: dict[str, list[Scored]] = {}
            for variant in variants:
                if variant.group not in order:
                    order.append(variant.group)
                key = variant_key(variant.prompt)
                swap = tuple(sorted(variant.swap.items()))
                got = []
                for sample in range(samples):
                    found = answers.by_key.get((key, sample))
                    if found is None:
                        continue
                    memo = (key, sample, swap)
                    if memo not in cache:
                        cache[memo] = score(found[0], variant.swap, found[1])
                    got.append(cache[memo])
                if got:
                    row[variant.group] = got
            rows.setdefault(axis, []).append(row)
    lexicon = replay_groups()
    out = {}
    for axis, prompts in rows.items():
        order = list(lexicon[axis]) if axis in lexicon else orders[axis]
        order += [g for g in orders[axis] if g not in order]
        out[axis] = AxisAnswers(order, reference_group(named[axis], order), prompts)
    return out


def replay_document(
    model: str, plans: Sequence[PromptPlan], axes: Mapping[str, AxisAnswers], samples: int
) -> dict[str, Any]:
    return {
        "model": model,
        "n_prompts": len(plans),
        "samples": samples,
        "practical_sizes": dict(PRACTICAL),
        "axes": {axis: axis_disparity(a.prompts, a.reference, a.groups) for axis, a in axes.items()},
        "notes": [
            "toxicity is the shipped lexicon's (slurs, insults, dehumanizing phrasing), not a classifier",
            "p_value is Holm-adjusted within each metric across the axis' pairs; flagged = p < 0.05 and "
            "the estimate past the practical size",
        ],
    }


def sandbox_document(
    candidate_model: str,
    baseline_model: str,
    plans: Sequence[PromptPlan],
    candidate: Mapping[str, AxisAnswers],
    baseline: Mapping[str, AxisAnswers],
    samples: int,
) -> dict[str, Any]:
    """Per (axis, pair, metric): the candidate's gap against the baseline's, paired by prompt."""
    entries = []
    for axis, c in candidate.items():
        b = baseline.get(axis)
        if b is None:
            continue
        for row in compare_models(c.prompts, b.prompts, c.reference, c.groups):
            entries.append({**row, "axis": axis})
    return {
        "candidate_model": candidate_model,
        "baseline_model": baseline_model,
        "n_prompts": len(plans),
        "samples": samples,
        "practical_sizes": dict(PRACTICAL),
        "correction": "holm",
        "worse": any(e["worse"] for e in entries),
        "entries": entries,
    }


# --- publishing ---------------------------------------------------------------------------


def answer_events(
    endpoint: str, model: str, plans: Sequence[PromptPlan], answers: Answers, samples: int, tenant: str
) -> Iterator[bytes]:
    """One llm.responses event per prompt and sample: the reference's answer, the variants' answers
    as its counterfactuals (with the swap that made them). The audit_id is fixed by endpoint, model,
    prompt and sample, so publishing again is counted once."""
    now = datetime.now(timezone.utc).isoformat()
    for plan in plans:
        first = next(iter(plan.axes.values()), None)
        if not first:
            continue
        reference = first[0]
        for sample in range(samples):
            own = answers.by_key.get((variant_key(reference.prompt), sample))
            if own is None:
                continue
            counterfactuals = []
            for variants in plan.axes.values():
                for variant in variants[1:]:
                    found = answers.by_key.get((variant_key(variant.prompt), sample))
                    if found is not None:
                        counterfactuals.append(
                            {"swap": variant.swap or {variants[0].group: variant.group}, "llm_response": found[0]}
                        )
            audit = hashlib.sha256(f"{endpoint}\x1f{model}\x1f{plan.id}\x1f{sample}".encode()).hexdigest()[:32]
            yield orjson.dumps(
                {
                    "audit_id": f"replay-{audit}",
                    "tenant_id": tenant,
                    "timestamp": now,
                    "llm_model": model,
                    "llm_response": own[0],
                    "counterfactuals": counterfactuals[:32],
                    "query_context": {"source": "replay", "prompt_id": plan.id, "sample": sample},
                }
            )


# --- writing ------------------------------------------------------------------------------


def _value(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric == "length_ratio":
        return f"{value:.2f}x"
    return f"{value:+.3f}"


def write_replay(document: dict[str, Any], format: str, out: IO[str]) -> None:
    from .sandbox import write_document

    write_document(document, format, out, html=_html, text=_text)


def _text(document: dict[str, Any], out: IO[str]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from bias_audit.schemas.safe_text import visible

    console = Console(file=out, highlight=False, width=None if out.isatty() else 140)
    console.print(
        f"replay of {visible(document['model'])}: {document['n_prompts']} prompts x "
        f"{document['samples']} samples; {document['notes'][1]}"
    )
    for axis, entries in document["axes"].items():
        table = Table(title=f"{visible(axis)}", title_justify="left")
        for column in ("group vs reference", "metric", "estimate (95% CI)", "n", "p (Holm)", "flag"):
            table.add_column(column, justify="left" if column in ("group vs reference", "metric", "flag") else "right")
        for entry in entries:
            for metric in METRICS:
                m = entry[metric]
                interval = (
                    ""
                    if m["ci_lower"] is None
                    else f" ({_value(metric, m['ci_lower'])} to {_value(metric, m['ci_upper'])})"
                )
                table.add_row(
                    Text(f"{visible(entry['group'])} vs {visible(entry['reference'])}"),
                    metric,
                    _value(metric, m["estimate"]) + interval,
                    str(m["n"]),
                    "-" if m["p_value"] is None else f"{m['p_value']:.3g}",
                    Text("FLAG" if m["flagged"] else "", style="bold red"),
                )
        console.print(table)
    if not document["axes"]:
        console.print("no prompt named a group of the chosen axes: nothing to compare")
    console.print(document["notes"][0])


def _forest(metric: str, entries: Sequence[dict[str, Any]]) -> str:
    """One forest plot per metric: a row per group, its estimate and 95% CI, the practical band
    shaded (length as the log of the ratio, so 1.2x and 1/1.2 sit alike)."""
    from bias_audit.reports.svg import forest_plot

    log = metric == "length_ratio"

    def shown(value: float) -> float:
        return math.log(value) if log else value

    rows: list[tuple[str, float, float | None, float | None, bool]] = [
        (
            f"{e['group']} vs {e['reference']}",
            shown(e[metric]["estimate"]),
            shown(e[metric]["ci_lower"]),
            shown(e[metric]["ci_upper"]),
            bool(e[metric]["flagged"]),
        )
        for e in entries
        if e[metric]["estimate"] is not None
    ]
    size = math.log(PRACTICAL[metric]) if log else PRACTICAL[metric]
    return forest_plot(
        rows,
        title=metric + (" (log of the ratio)" if log else ""),
        unit="log ratio" if log else "gap",
        band=size,
        band_label=f"practical size {PRACTICAL[metric]:g}" + ("x" if log else ""),
        width=480,
    )


def _html(document: dict[str, Any]) -> str:
    sections = []
    for axis, entries in document["axes"].items():
        plots = "".join(f"<div>{_forest(metric, entries)}</div>" for metric in METRICS)
        flags = [
            f"{html.escape(e['group'])} vs {html.escape(e['reference'])}: {m}"
            for e in entries
            for m in METRICS
            if e[m]["flagged"]
        ]
        sections.append(
            f"<h2>{html.escape(axis)}</h2><p>{'flagged: ' + ', '.join(flags) if flags else 'nothing flagged'}"
            f"</p><div class=plots>{plots}</div>"
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bias-audit replay</title>'
        "<style>body{font:15px system-ui,sans-serif;margin:2rem}.plots{display:flex;flex-wrap:wrap;gap:1rem}"
        "</style></head><body>"
        f"<h1>Counterfactual replay: {html.escape(document['model'])}</h1>"
        f"<p>{document['n_prompts']} prompts, {document['samples']} samples each. Each dot is a group's "
        "mean difference from the reference group over prompts, the line its 95% bootstrap CI, the shaded "
        f"band the practical size. {html.escape(document['notes'][1])}; {html.escape(document['notes'][0])}.</p>"
        + "".join(sections)
        + "</body></html>\n"
    )


def write_sandbox(document: dict[str, Any], format: str, out: IO[str]) -> None:
    if format == "json":
        out.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from bias_audit.schemas.safe_text import visible

    console = Console(file=out, highlight=False, width=None if out.isatty() else 150)
    table = Table(
        title=f"sandbox replay: {visible(document['candidate_model'])} (candidate) vs "
        f"{visible(document['baseline_model'])} (baseline), {document['n_prompts']} prompts x "
        f"{document['samples']}, holm",
        title_justify="left",
    )
    for column in (
        "axis",
        "group vs reference",
        "metric",
        "baseline",
        "candidate",
        "difference (95% CI)",
        "p",
        "verdict",
    ):
        table.add_column(column)
    for e in document["entries"]:
        if e["difference"] is None:
            continue
        metric = e["metric"]
        shown = (lambda v: f"{v:.2f}x") if metric == "length_ratio" else (lambda v: f"{v:+.3f}")
        table.add_row(
            Text(visible(e["axis"])),
            Text(f"{visible(e['group'])} vs {visible(e['reference'])}"),
            metric,
            shown(e["baseline"]),
            shown(e["candidate"]),
            f"{shown(e['difference'])} ({shown(e['ci_lower'])} to {shown(e['ci_upper'])})",
            f"{e['p_value']:.3g}",
            Text("worse" if e["worse"] else "", style="bold red"),
        )
    console.print(table)


def worse_lines(document: dict[str, Any]) -> Iterable[str]:
    for e in document["entries"]:
        if e["worse"]:
            yield (
                f"worse: {e['axis']} {e['group']} vs {e['reference']} {e['metric']}: baseline "
                f"{e['baseline']}, candidate {e['candidate']} (difference {e['difference']}, 95% CI "
                f"{e['ci_lower']} to {e['ci_upper']}, Holm p {e['p_value']})"
            )
