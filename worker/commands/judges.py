"""`bias-audit judges`: the judge report over the field's judge files or the store."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from bias_audit.schemas.errors import CommandError

from .common import DataDirOpt, StoreOpt, command, progress_bar, say, settings_with


class JudgeSource(str, Enum):
    auto = "auto"
    events = "events"
    judgebench = "judgebench"
    alpaca_eval = "alpaca_eval"
    mt_bench = "mt_bench"
    lmc = "lmc"


class JudgeFormat(str, Enum):
    text = "text"
    json = "json"
    csv = "csv"
    html = "html"


SourceOpt = Annotated[
    JudgeSource,
    typer.Option(
        "--source",
        "-s",
        help="the files' format: auto (by their fields), events (judge.verdicts JSONL), judgebench "
        "(its outputs JSONL), alpaca_eval (annotations.json), mt_bench (FastChat's model_judgment JSONL) or lmc (the "
        "Language Model Council's judging JSONL)",
    ),
]
AnswersOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--answers", metavar="DIR", help="MT-Bench: FastChat's model_answer/ folder, for the answers' lengths"
    ),
]


@command
def judges(
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(
            metavar="PATH", help="judge files or folders (default: the store's verdicts)", show_default=False
        ),
    ] = None,
    source: SourceOpt = JudgeSource.auto,
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="only this tenant's verdicts")] = None,
    format: Annotated[JudgeFormat, typer.Option("--format", "-f", help="text, json, csv or html")] = JudgeFormat.text,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="write here instead of stdout")
    ] = None,
    answers: AnswersOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Audit LLM judges: position, length, accuracy, self-preference, agreement.

    Per judge (model and prompt), each with its 95% CI and N: position consistency, first-position
    rate, preference fairness, length preference, accuracy against labels (JudgeBench's rule),
    tie and failed rates, self-preference, agreement with humans (Cohen's kappa), repeat
    consistency; for single-answer grading (MT-Bench's single mode) the scores' distribution, their
    correlation with length, and each model's mean score; per (judge, model) AlpacaEval's win rate
    against the baseline; Krippendorff's alpha between judges. Reads the public judge files as
    their projects write them (gzipped too), or the verdicts in the store. Files are read as one
    set: a verdict read twice (the same file given twice) counts once."""
    from bias_audit.analysis.judge_games import game_from_event
    from bias_audit.analysis.judges import judge_report
    from bias_audit.reports.judges import judge_document, render_judges

    if paths:
        if store is not None:
            raise CommandError("give judge files or --store, not both")
        from bias_audit.importers.sources import read_verdicts

        files = read_verdicts(
            paths,
            source.value,
            answers=str(answers) if answers else None,
            limits=settings_with(data_dir=data_dir).limits,
        )
        from bias_audit.gc_tuning import collector_paused

        with _progress(files.total_bytes) as advance, collector_paused():  # games hold no cycles to collect
            games = [game_from_event(e) for e in files.read(advance) if tenant is None or e["tenant_id"] == tenant]
            document = judge_document(judge_report(games), sources=list(paths), duplicates=files.duplicates)
    else:
        if answers is not None or source is not JudgeSource.auto:
            raise CommandError("--source and --answers describe judge files; name the files")
        document = _stored_report(store, data_dir, tenant)
    # a terminal's width (or COLUMNS); piped or written to a file, the wide tables
    width = shutil.get_terminal_size((0, 0)).columns if output is None else 0
    text = render_judges(document, format.value, width or None)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        say(f"wrote {output}")


def _progress(total_bytes: int) -> AbstractContextManager[Callable[[int], None] | None]:
    """A bar (on a terminal) for inputs large enough to keep one waiting, as `report` shows."""
    from bias_audit.reports.run import PROGRESS_FROM_BYTES

    if total_bytes >= PROGRESS_FROM_BYTES:
        return progress_bar("reading verdicts", total_bytes, in_bytes=True)
    return nullcontext(None)


def _stored_report(store: str | None, data_dir: Path | None, tenant: str | None) -> dict:
    import psycopg

    from bias_audit.reports.judges import judge_report_over_store
    from bias_audit.schemas.safe_text import reason_of, redact

    from .common import store_for

    with store_for(store, data_dir, "the judge report reads") as url:
        try:
            return judge_report_over_store(url, tenant)
        except psycopg.Error as error:
            raise CommandError(f"reading verdicts from {redact(url)} failed: {reason_of(error)}", exit_code=1) from None
