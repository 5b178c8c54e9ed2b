"""What every command shares: the typer app, the options several take, one-line messages,
progress bars, and the stores a command may need. Only typer is imported here, so `--help` and
argument errors answer at once (tests/worker/test_cli_help.py keeps it so)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any, NoReturn, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from bias_audit import __version__
from bias_audit.schemas.errors import CommandError
from bias_audit.schemas.safe_text import one_line, redact


class _NoFlagTypes:
    """Typer 0.29 shows a type tag beside every parameter (`--help <bool>`): a flag takes no value."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class _Command(_NoFlagTypes, TyperCommand):
    pass


class _Group(_NoFlagTypes, TyperGroup):
    pass


app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    rich_markup_mode="markdown",  # docstring paragraphs reflow to the terminal's width
)
FLAG = ""  # metavar of a flag: nothing to type after it


def say(message: str) -> None:
    """One line on stderr, never wrapped, never read as markup or terminal codes, and never
    showing a password (messages quote ids from events and URLs from flags)."""
    sys.stderr.write(one_line(redact(message)) + "\n")
    sys.stderr.flush()


def _version(value: bool) -> None:
    if value:
        print(f"bias-audit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", metavar=FLAG, is_eager=True, callback=_version, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """Audit bias in LLM councils, LLM responses and LLM judges' verdicts, live on Redis Streams or
    Google Pub/Sub, or over JSONL files and the judges' public files.

    Start with `bias-audit demo`; README.md has a quickstart. Every command has `-h`."""


BrokerOpt = Annotated[
    Optional[str],
    typer.Option(
        "--broker",
        metavar="URL",
        help="redis://HOST:PORT/DB or pubsub://PROJECT (honours PUBSUB_EMULATOR_HOST); env BIAS_AUDIT_BROKER_URL",
    ),
]
RedisOpt = Annotated[
    Optional[str],
    typer.Option(
        "--redis",
        metavar="URL",
        help="Redis for the windows (required with pubsub://; default: the broker's Redis); env BIAS_AUDIT_REDIS_URL",
    ),
]
StoreOpt = Annotated[
    Optional[str],
    typer.Option(
        "--store",
        metavar="URL|DIR",
        help="the audit store: postgresql://... (libpq URL, unix sockets too) or a "
        "directory of JSONL records (default: the embedded PostgreSQL in DATA_DIR/postgres); env BIAS_AUDIT_STORE_URL",
    ),
]
DataDirOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--data-dir",
        metavar="DIR",
        help="the embedded Redis and PostgreSQL (default .bias-audit); env BIAS_AUDIT_DATA_DIR",
    ),
]
WindowSessionsOpt = Annotated[
    Optional[int],
    typer.Option(metavar="N", help="window: last N sessions per tenant (default 100); env BIAS_AUDIT_WINDOW_SESSIONS"),
]
WindowDaysOpt = Annotated[
    Optional[float],
    typer.Option(metavar="DAYS", help="window: last D days per tenant (default 30); env BIAS_AUDIT_WINDOW_DAYS"),
]
ConsentOpt = Annotated[
    Optional[int],
    typer.Option(
        metavar="0-4", help="default consent level when an event has none (default 1); env BIAS_AUDIT_CONSENT_LEVEL"
    ),
]


def settings_with(**overrides: Any):
    from ..settings import settings_from

    return settings_from(**overrides)


def command(function=None, *, name: str | None = None):
    """A command whose CommandError becomes one line on stderr and its exit code; `name` when
    the command's name is a Python keyword (`import`)."""

    def register(function):
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> None:
            try:
                function(*args, **kwargs)
            except CommandError as error:
                fail(error.message, error.exit_code)

        return app.command(name, cls=_Command)(run)

    return register(function) if function is not None else register


def write_output(output: Path | None, write: Callable[[IO[str]], None]) -> None:
    """A document to stdout, or to the file --output names (and a line saying so)."""
    if output is None:
        write(sys.stdout)
        return
    with open(output, "w", encoding="utf-8") as handle:
        write(handle)
    say(f"wrote {output}")


def fail(message: str, code: int = 2) -> NoReturn:
    say(f"error: {message}")
    raise typer.Exit(code)


@contextmanager
def _terminal_bar(label: str, total: int | None, *columns: Any) -> Iterator[tuple[Any, Any] | None]:
    """A transient rich bar on stderr with these columns: (the Progress, its task), or None when
    stderr is no terminal (a log or a pipe gets the summary line only)."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    with Progress(*columns, console=console, transient=True) as progress:
        yield progress, progress.add_task(label, total=total)


@contextmanager
def progress_bar(label: str, total: int | None, in_bytes: bool = False) -> Iterator[Callable[[int], None]]:
    """A transient progress bar on stderr; yields the advance callback."""
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, TimeRemainingColumn

    done = DownloadColumn() if in_bytes else MofNCompleteColumn()
    with _terminal_bar(label, total, label, BarColumn(), done, TimeRemainingColumn()) as shown:
        if shown is None:
            yield lambda n: None
            return
        progress, task = shown
        yield lambda n: progress.advance(task, n)


@contextmanager
def step_bar(label: str, total: int) -> Iterator[Callable[[str], None]]:
    """A transient bar on stderr over `total` named steps; yields step(name), called as each
    begins: the bar shows the steps done and the one under way."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with _terminal_bar(label, total, *columns) as shown:
        if shown is None:
            yield lambda name: None
            return
        progress, task = shown
        begun = 0

        def step(name: str) -> None:
            nonlocal begun
            progress.update(task, completed=begun, description=f"{label} {name}")
            begun += 1

        yield step


def event_lines(source: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of non-blank lines, streamed from a file or stdin."""
    if source == "-":
        handle = sys.stdin.buffer
    else:
        path = Path(source)
        if not path.is_file():
            raise CommandError(f"{source}: no such file")
        handle = open(path, "rb")
    with handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip(b"\r\n")
            if line.strip():
                yield number, line


def postgres_store(store: str | None, needs: str) -> str:
    """The PostgreSQL store's URL for a command that `needs` one, its migrations checked."""
    from ..store_setup import require_store_schema

    settings = settings_with(store_url=store)
    if not settings.store_is_postgres:
        raise CommandError(f"{needs} a PostgreSQL store: pass --store postgresql://... or set BIAS_AUDIT_STORE_URL")
    url = settings.store_url or ""
    require_store_schema(url)
    return url


@contextmanager
def store_for(store: str | None, data_dir: Path | None, needs: str, *, create: bool = False) -> Iterator[str]:
    """--store / BIAS_AUDIT_STORE_URL, else the data directory's embedded store (the one
    `worker` starts), held for the block; create: start one when there is none yet."""
    from ..store_setup import embedded_store

    with embedded_store(settings_with(store_url=store, data_dir=data_dir), create=create) as settings:
        yield postgres_store(settings.store_url, needs)


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A command's summary table on stdout (wide: the reliability bins run long)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console(width=160).print(table)


def listed(values: list[str] | None) -> list[str]:
    """Repeated options and comma-separated lists both: --models a,b --models c."""
    return [name.strip() for value in values or [] for name in value.split(",") if name.strip()]
