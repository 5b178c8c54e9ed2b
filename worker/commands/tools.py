"""Commands beside the stream: sandbox, orders, demo, schemas, token."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from bias_audit.schemas.errors import CommandError

from .common import FLAG, DataDirOpt, StoreOpt, command, listed, say, settings_with, store_for, write_output
from .replay import AxesOpt


class SandboxFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


@command
def sandbox(
    candidate: Annotated[
        Optional[Path],
        typer.Option(
            metavar="FILE",
            help="the candidate's answers: llm.responses events (JSONL); or replay both models with --endpoint",
        ),
    ] = None,
    baseline: Annotated[
        Optional[Path],
        typer.Option(metavar="FILE", help="the baseline's answers: llm.responses events (JSONL); or use --store"),
    ] = None,
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="with --store: the baseline's tenant")] = None,
    model: Annotated[Optional[str], typer.Option(metavar="MODEL", help="with --store: only this llm_model")] = None,
    since: Annotated[
        Optional[str], typer.Option(metavar="ISO", help="with --store: answers at or after this time")
    ] = None,
    until: Annotated[Optional[str], typer.Option(metavar="ISO", help="with --store: answers before this time")] = None,
    format: Annotated[SandboxFormat, typer.Option("--format", "-f", help="text, json or html")] = SandboxFormat.text,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="write here instead of stdout")
    ] = None,
    data_dir: DataDirOpt = None,
    endpoint: Annotated[
        Optional[str],
        typer.Option(metavar="URL", help="replay mode: an OpenAI-compatible base URL serving both models"),
    ] = None,
    candidate_model: Annotated[Optional[str], typer.Option(metavar="NAME", help="replay mode: the candidate")] = None,
    baseline_model: Annotated[Optional[str], typer.Option(metavar="NAME", help="replay mode: the baseline")] = None,
    prompts: Annotated[
        Optional[Path], typer.Option(metavar="FILE", help="replay mode: the prompts (as `replay`)")
    ] = None,
    axes: AxesOpt = None,
    samples: Annotated[int, typer.Option(metavar="K", help="replay mode: requests per variant")] = 3,
    concurrency: Annotated[int, typer.Option(metavar="C", help="replay mode: requests in flight")] = 8,
    timeout: Annotated[float, typer.Option(metavar="SECONDS", help="replay mode: per request")] = 60.0,
    max_retries: Annotated[int, typer.Option(metavar="N", help="replay mode: the client's retries")] = 2,
) -> None:
    """Compare a candidate model or prompt with a baseline before it ships.

    From answers (--candidate FILE with --baseline FILE or the store): per bias type, the flagged
    rate on each side, the difference with its 95% CI, a test (paired McNemar when the answers
    pair by audit_id or query_hash, else Fisher's exact) and a verdict after Holm's correction.

    By replay (--endpoint URL --candidate-model M --baseline-model B --prompts FILE): both models
    answer the same group-swapped prompts (as `replay`); per axis, pair and metric, the
    candidate's gap minus the baseline's, paired by prompt; worse when its CI lies beyond the
    practical size (Holm). Exit 3 when anything is worse (a CI gate), 0 otherwise, 2 on bad input."""
    if endpoint is not None or candidate_model is not None or baseline_model is not None or prompts is not None:
        _replay_sandbox(
            endpoint,
            candidate_model,
            baseline_model,
            prompts,
            axes,
            samples,
            concurrency,
            timeout,
            max_retries,
            format,
            output,
            data_dir,
            candidate,
            baseline,
        )
        return
    if candidate is None:
        raise CommandError(
            "give the candidate's answers (--candidate FILE), or replay both models "
            "(--endpoint URL --candidate-model M --baseline-model B --prompts FILE)"
        )
    from bias_audit.storage.postgres import connect, save_sandbox_run

    from ..export import parse_since
    from ..logging_setup import configure_logging
    from ..sandbox import audited_file, sandbox_document, stored_answers, worse, write

    configure_logging("ERROR")  # a bad line is the command's one-line error, not a log record
    if baseline is not None and (store is not None or os.environ.get("BIAS_AUDIT_STORE_URL")):
        raise CommandError(
            "give the baseline as --baseline FILE or from a store (--store URL --tenant T; "
            "default: the data directory's embedded store), not both"
        )
    settings = settings_with(data_dir=data_dir)
    if baseline is not None:
        document = sandbox_document(
            audited_file(baseline, settings, "baseline"), audited_file(candidate, settings, "candidate")
        )
    else:
        if tenant is None:
            raise CommandError(
                "a baseline from the store needs --tenant (the baseline is one tenant's answers), "
                "or give --baseline FILE"
            )
        with store_for(store, data_dir, "the sandbox's baseline reads") as url, connect(url) as connection:
            base = stored_answers(
                connection, tenant=tenant, model=model, since=parse_since(since), until=parse_since(until, "--until")
            )
            document = sandbox_document(base, audited_file(candidate, settings, "candidate"))
            # kept beside the history it was measured against: readable in GraphQL (sandboxRuns)
            document["run_id"] = save_sandbox_run(
                connection,
                tenant=tenant,
                document=document,
                worse=worse(document),
                baseline={"model": model, "since": since, "until": until},
            )
    write_output(output, lambda out: write(document, format.value, out))
    if worse(document):
        raise typer.Exit(3)


def _replay_sandbox(
    endpoint: str | None,
    candidate_model: str | None,
    baseline_model: str | None,
    prompts: Path | None,
    axes: list[str] | None,
    samples: int,
    concurrency: int,
    timeout: float,
    max_retries: int,
    format: SandboxFormat,
    output: Path | None,
    data_dir: Path | None,
    candidate: Path | None,
    baseline: Path | None,
) -> None:
    from ..replay import (
        DEFAULT_AXES,
        answer_scorer,
        read_prompts,
        sandbox_document,
        scored_axes,
        worse_lines,
        write_sandbox,
    )
    from .replay import check_replay_options, replay_model

    if candidate is not None or baseline is not None:
        raise CommandError(
            "replay mode compares two models at --endpoint; --candidate/--baseline FILE is the other mode"
        )
    needed = {
        "--endpoint": endpoint,
        "--candidate-model": candidate_model,
        "--baseline-model": baseline_model,
        "--prompts": prompts,
    }
    missing = [name for name, value in needed.items() if value is None]
    if missing:
        raise CommandError(f"replay mode needs {', '.join(missing)} too")
    assert endpoint is not None and candidate_model is not None and baseline_model is not None and prompts is not None
    if format == SandboxFormat.html:
        raise CommandError("replay mode writes text or json")
    check_replay_options(samples, concurrency, timeout, max_retries)
    plans = read_prompts(prompts, listed(axes) or list(DEFAULT_AXES))
    if not any(plan.axes for plan in plans):
        raise CommandError(f"{prompts}: no prompt names a group of the axes; name one, or give the variants yourself")
    score = answer_scorer()
    sides = {}
    for model in (baseline_model, candidate_model):
        answers = replay_model(
            endpoint, model, prompts, plans, samples, concurrency, None, data_dir, timeout, max_retries
        )
        sides[model] = scored_axes(plans, answers, samples, score)
    document = sandbox_document(
        candidate_model, baseline_model, plans, sides[candidate_model], sides[baseline_model], samples
    )
    write_output(output, lambda out: write_sandbox(document, format.value, out))
    for line in worse_lines(document):
        say(line)
    if document["worse"]:
        raise typer.Exit(3)


class OrdersDesign(str, Enum):
    williams = "williams"
    random = "random"


class OrdersFormat(str, Enum):
    text = "text"
    json = "json"


@command
def orders(
    models: Annotated[
        list[str],
        typer.Option(
            "--models", "-m", metavar="M1,M2,...", help="the candidates to order (comma-separated or repeated)"
        ),
    ],
    reviewers: Annotated[
        list[str],
        typer.Option("--reviewers", "-r", metavar="R1,R2,...", help="the reviewers, each getting its own order"),
    ],
    seed: Annotated[int, typer.Option(metavar="S", help="the same seed gives the same orders")],
    design: Annotated[
        OrdersDesign,
        typer.Option(
            help="williams: balanced Latin square (each model at each "
            "position and after each other model equally); random"
        ),
    ] = OrdersDesign.williams,
    sessions: Annotated[int, typer.Option(metavar="N", help="sessions to plan, 1-10000")] = 1,
    format: Annotated[OrdersFormat, typer.Option("--format", "-f", help="text or json")] = OrdersFormat.text,
) -> None:
    """Per-reviewer presentation orders, deterministic for a seed.

    Williams design: reviewers take consecutive rows of a balanced Latin square, session after
    session, so every model is shown at every position, and right after every other model, equally
    often per cycle of rows (n rows for n models when n is even, 2n when odd). JSON carries each
    review's label_to_model, ready for the council event. The report's randomization check
    recognises the design."""
    import json

    from bias_audit.analysis.orders import OrdersError, orders_document

    try:
        document = orders_document(listed(models), listed(reviewers), seed, design.value, sessions)
    except OrdersError as error:
        raise CommandError(str(error)) from None
    if format is OrdersFormat.json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    for o in document["orders"]:  # type: ignore[attr-defined]
        sys.stdout.write(f"session {o['session']}  {o['reviewer']}: {' > '.join(o['order'])}\n")


@command
def demo(
    input: Annotated[
        Optional[Path],
        typer.Option("--input", "-i", metavar="FILE", help="JSONL council sessions (default: the shipped samples)"),
    ] = None,
) -> None:
    """End-to-end run on an embedded Redis and PostgreSQL over samples with known biases.

    Shipped council sessions and LLM responses with injected biases go through a real worker;
    exits 1 if one is missed or a bystander is flagged."""
    from ..demo import run_demo

    raise typer.Exit(run_demo(input))


@command
def schemas(
    check: Annotated[
        bool, typer.Option("--check", metavar=FLAG, help="exit 1 if the committed schemas drifted")
    ] = False,
    out: Annotated[
        Optional[Path], typer.Option(metavar="DIR", help="directory (default: the package's schemas/json)")
    ] = None,
) -> None:
    """Write the contract's JSON Schemas and AsyncAPI document, or check them."""
    from bias_audit.schemas.export import SCHEMA_DIR, drifted_schemas, write_schemas

    directory = out or SCHEMA_DIR
    if check:
        drifted = drifted_schemas(directory)
        if drifted:
            raise CommandError(f"drifted from the models: {', '.join(drifted)}; run `bias-audit schemas`", exit_code=1)
        print("schemas up to date")
        return
    for path in write_schemas(directory):
        print(path)


@command
def token(
    tenant: Annotated[
        list[str], typer.Option(metavar="TENANT", help="a tenant the token may read and write (repeatable)")
    ],
    role: Annotated[list[str], typer.Option(metavar="ROLE", help="service, reviewer, auditor or admin (repeatable)")],
    subject: Annotated[
        str, typer.Option(metavar="NAME", help="who the token is for: the reviewer's name in reviews")
    ] = "local-user",
    expires_in: Annotated[int, typer.Option(metavar="SECONDS", help="lifetime, 60 to 86400")] = 3600,
) -> None:
    """Print a bearer token for the API, signed with BIAS_AUDIT_JWT_SECRET (HS256).

    For trying the API and the review page against a `serve` that has the same secret; an
    organisation's identity provider issues the real ones. Expiring; never without a secret."""
    import time

    import jwt

    from bias_audit.service.auth import ROLES, TokenVerifier

    settings = settings_with()
    if settings.jwt_secret is None:
        raise CommandError(
            "token signs with BIAS_AUDIT_JWT_SECRET (HS256): set it as `serve` has it "
            "(e.g. `export BIAS_AUDIT_JWT_SECRET=$(openssl rand -hex 32)`)"
        )
    secret = settings.jwt_secret.get_secret_value()
    try:
        TokenVerifier(secret=secret)  # the secret's own rules: long enough, not blank
    except ValueError as error:
        raise CommandError(str(error)) from None
    unknown = sorted(set(role) - set(ROLES))
    if unknown:
        raise CommandError(f"unknown role {', '.join(unknown)}: roles are {', '.join(ROLES)}")
    if not 60 <= expires_in <= 86_400:
        raise CommandError("--expires-in is 60 to 86400 seconds")
    claims: dict[str, object] = {
        "sub": subject,
        "tenants": sorted(set(tenant)),
        "roles": sorted(set(role)),
        "iat": int(time.time()),
        "exp": int(time.time()) + expires_in,
    }
    if settings.jwt_audience:
        claims["aud"] = settings.jwt_audience
    if settings.jwt_issuer:
        claims["iss"] = settings.jwt_issuer
    print(jwt.encode(claims, secret, algorithm="HS256"))
