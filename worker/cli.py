"""`bias-audit`: the command line. Each command parses its arguments and calls one function of
the package it belongs to (worker/commands/); everything beyond typer is imported inside the
command that runs, so `--help` and argument errors answer at once.

Exit codes: 0 ok, 2 usage or input error (one line saying why), 1 anything else.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

# each module registers its commands on `app`; --help lists them in this order
from .commands import judges, learning, replay, report, store, stream, tools  # noqa: F401
from .commands.common import app, say

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> NoReturn:
    """The `bias-audit` script: usage errors as one line naming the fix, not a boxed panel."""
    # The analysis multiplies small matrices: OpenBLAS's thread pool would only cost its start-up
    # and spin cores the worker's event loop needs. Set the variable to use more.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        code = app(args=argv, prog_name="bias-audit", standalone_mode=False)
    except typer.Abort:
        say("aborted")
        code = 130
    except typer.TyperException as error:  # click's usage errors
        context = getattr(error, "ctx", None)
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `bias-audit`: its help
            sys.stdout.write(error.format_message() + "\n")
            code = 0
        else:
            hint = f" (see `{context.command_path} --help`)" if context is not None else ""
            say(f"error: {error.format_message()}{hint}")
            code = getattr(error, "exit_code", 2)
    except Exception as error:  # a bug or an unforeseen failure: one line; the traceback on request
        if os.environ.get("BIAS_AUDIT_DEBUG"):
            raise
        say(f"error: {type(error).__name__}: {error} (set BIAS_AUDIT_DEBUG=1 for the traceback)")
        code = 1
    sys.exit(code if isinstance(code, int) else 0)
