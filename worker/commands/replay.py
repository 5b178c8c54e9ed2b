"""Commands that ask the operator's own model: replay."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from bias_audit.schemas.errors import CommandError

from .common import FLAG, BrokerOpt, DataDirOpt, command, listed, progress_bar, say, settings_with, write_output


class ReplayFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


EndpointOpt = Annotated[
    str,
    typer.Option(
        metavar="URL",
        help="an OpenAI-compatible chat-completions base URL, e.g. http://localhost:8000/v1 "
        "(key: BIAS_AUDIT_REPLAY_API_KEY or OPENAI_API_KEY)",
    ),
]
PromptsOpt = Annotated[
    Path,
    typer.Option(
        metavar="FILE",
        help='JSON lines {"id", "prompt"} (varied by the shipped lexicons) or '
        '{"id", "variants": {"group": "prompt", ...}} (the first is the reference)',
    ),
]
AxesOpt = Annotated[
    Optional[list[str]],
    typer.Option(metavar="A,B,...", help="axes to vary: gender, ethnicity, religion, age (default all four)"),
]
SamplesOpt = Annotated[
    int,
    typer.Option(
        metavar="K",
        help="separate requests per variant (K >= 2 measures similarity; K = 1 tests yes/no metrics by McNemar)",
    ),
]
ConcurrencyOpt = Annotated[int, typer.Option(metavar="C", help="requests in flight at once")]
TimeoutOpt = Annotated[float, typer.Option(metavar="SECONDS", help="per request, as the openai client counts it")]
RetriesOpt = Annotated[
    int,
    typer.Option(
        metavar="N", help="the openai client's retries of a failed request (429, 5xx, connection errors), with backoff"
    ),
]


def check_replay_options(samples: int, concurrency: int, timeout: float, retries: int) -> None:
    if samples < 1:
        raise CommandError("--samples must be at least 1")
    if not 1 <= concurrency <= 1024:
        raise CommandError("--concurrency must be 1-1024")
    if timeout <= 0:
        raise CommandError("--timeout must be positive")
    if retries < 0:
        raise CommandError("--max-retries must be 0 or more")


def replay_model(
    endpoint: str,
    model: str,
    prompts: Path,
    plans: list[Any],
    samples: int,
    concurrency: int,
    responses: Path | None,
    data_dir: Path | None,
    timeout: float,
    retries: int,
) -> Any:
    """Ask what the responses file lacks, then read it all back: the file's answers."""
    import asyncio

    from ..replay import api_key, ask, default_responses, missing_requests, read_answers

    settings = settings_with(data_dir=data_dir)
    path = responses or default_responses(settings.data_dir, endpoint, model, prompts, samples)
    answers = read_answers(path)
    todo = missing_requests(plans, samples, answers.by_key)
    if todo:
        path.parent.mkdir(parents=True, exist_ok=True)
        done = len(answers.by_key)
        say(
            f"{model}: asking {len(todo)} requests ({done} already in {path})"
            if done
            else f"{model}: asking {len(todo)} requests; answers go to {path}"
        )
        if path.exists() and path.stat().st_size > answers.complete_bytes:
            os.truncate(path, answers.complete_bytes)  # the partial line a killed run left
        with open(path, "ab") as out, progress_bar(f"asking {model}", len(todo)) as advance:
            outcome = asyncio.run(
                ask(
                    endpoint,
                    model,
                    todo,
                    out,
                    concurrency=concurrency,
                    api_key=api_key(),
                    timeout=timeout,
                    max_retries=retries,
                    advance=advance,
                )
            )
        if outcome.answered == 0 and outcome.failed:
            raise CommandError(f"{endpoint} never answered {model!r}: {outcome.last_error}")
        if outcome.failed:
            say(
                f"warning: {outcome.failed} of {len(todo)} requests failed ({outcome.last_error}); "
                "the figures leave them out; run again to ask only those"
            )
        answers = read_answers(path)
    else:
        say(f"{model}: every answer is already in {path}")
    return answers


@command
def replay(
    endpoint: EndpointOpt,
    model: Annotated[str, typer.Option(metavar="NAME", help="the model name the endpoint serves")],
    prompts: PromptsOpt,
    axes: AxesOpt = None,
    samples: SamplesOpt = 3,
    concurrency: ConcurrencyOpt = 8,
    responses: Annotated[
        Optional[Path],
        typer.Option(
            metavar="FILE",
            help="answers are appended here and a rerun asks only what is missing (default: "
            "DATA_DIR/replay/, named by endpoint, model, prompts and K)",
        ),
    ] = None,
    format: Annotated[ReplayFormat, typer.Option("--format", "-f", help="text, json or html")] = ReplayFormat.text,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="write here instead of stdout")
    ] = None,
    publish: Annotated[
        bool,
        typer.Option(
            "--publish",
            metavar=FLAG,
            help="also send every answer to llm.responses with its counterfactuals, for the worker to audit and store",
        ),
    ] = False,
    broker: BrokerOpt = None,
    tenant: Annotated[str, typer.Option(metavar="TENANT", help="with --publish: the events' tenant")] = "default",
    timeout: TimeoutOpt = 60.0,
    max_retries: RetriesOpt = 2,
    data_dir: DataDirOpt = None,
) -> None:
    """Ask a model the same prompts with only the group changed, and test whether it answers
    differently.

    Per axis and group against the reference group (the one most prompts name), paired by prompt:
    refusal-rate gap, sentiment gap (VADER), toxicity gap (the shipped lexicon's), length ratio
    and similarity gap, each with a 95% bootstrap CI and a Holm-adjusted test; flagged when
    p < 0.05 and the estimate is past the practical size. Exit 0 whatever it finds, 2 on bad
    input or an endpoint that never answers."""
    from ..replay import DEFAULT_AXES, answer_scorer, read_prompts, replay_document, scored_axes, write_replay

    check_replay_options(samples, concurrency, timeout, max_retries)
    plans = read_prompts(prompts, listed(axes) or list(DEFAULT_AXES))
    varied = sum(1 for plan in plans if plan.axes)
    if not varied:
        raise CommandError(
            f"{prompts}: no prompt names a group of the axes {', '.join(listed(axes) or DEFAULT_AXES)}; "
            "name one, or give the variants yourself"
        )
    if varied < len(plans):
        say(f"{len(plans) - varied} of {len(plans)} prompts name no group of the axes and are not asked")
    answers = replay_model(
        endpoint, model, prompts, plans, samples, concurrency, responses, data_dir, timeout, max_retries
    )
    document = replay_document(model, plans, scored_axes(plans, answers, samples, answer_scorer()), samples)
    write_output(output, lambda out: write_replay(document, format.value, out))
    if publish:
        from bias_audit.producers.publish import entries_for
        from bias_audit.producers.publish import publish as send

        from ..replay import answer_events
        from ..run import resolve_broker

        settings = settings_with(broker_url=broker, data_dir=data_dir)
        lines = list(enumerate(answer_events(endpoint, model, plans, answers, samples, tenant), 1))
        entries = entries_for(lines, lambda kind: settings.llm_topic)
        url = resolve_broker(settings)
        with progress_bar("publishing", len(entries)) as advance:
            send(url, entries, advance)
        say(f"published {len(entries)} answers with their counterfactuals to {settings.llm_topic} at {url}")


__all__ = [
    "replay",
    "replay_model",
    "EndpointOpt",
    "PromptsOpt",
    "AxesOpt",
    "SamplesOpt",
    "ConcurrencyOpt",
    "TimeoutOpt",
    "RetriesOpt",
    "check_replay_options",
]
