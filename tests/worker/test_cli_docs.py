"""docs/cli.md says what the commands' own help says: every command has a row, every option a row
names exists, and every option that takes one of a set of values lists that set as the help does."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from bias_audit.worker.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
OPTION = re.compile(r"^│ (?:\*)? *(--[a-z][a-z-]*)(?:\s+-[a-zA-Z])?\s+(\S+)")


def help_of(*command: str) -> str:
    done = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "250"}, prog_name="bias-audit")
    assert done.exit_code == 0, done.output
    return done.output


def commands() -> list[str]:
    listed = help_of().split("Commands")[1]
    return re.findall(r"^│ ([a-z]+) ", listed, flags=re.MULTILINE)


def options_of(command: str) -> dict[str, set[str] | None]:
    """--option -> its values when it takes one of a set (`a|b|c`), else None."""
    found: dict[str, set[str] | None] = {}
    for line in help_of(command).splitlines():
        match = OPTION.match(line)
        if match and match.group(1) != "--help":
            shown = match.group(2).strip("<>")
            found[match.group(1)] = set(shown.split("|")) if re.fullmatch(r"[a-z_]+(\|[a-z_]+)+", shown) else None
    return found


def rows() -> dict[str, str]:
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `bias-audit (\S+)([^`]*)` \|", DOC.read_text(), flags=re.MULTILINE)
    }


def test_docs_cli_names_every_command_and_only_options_and_values_the_commands_have():
    documented = rows()
    problems = []
    for command in commands():
        row = documented.get(command)
        if row is None:
            problems.append(f"{command}: no row")
            continue
        options = options_of(command)
        for option in re.findall(r"(--[a-z][a-z-]*)", row):
            if option not in options:
                problems.append(f"{command}: {option} is not an option")
        for option, values in options.items():
            if values is None:
                continue
            shown = re.search(re.escape(option) + r" ([a-z_\\|]+)", row)
            if shown is None:
                problems.append(f"{command}: {option} ({'|'.join(sorted(values))}) is not in the row")
            elif set(shown.group(1).replace("\\", "").split("|")) != values:
                problems.append(
                    f"{command}: {option} {shown.group(1)} but the command takes {'|'.join(sorted(values))}"
                )
    assert problems == []


def test_the_top_level_help_names_the_three_inputs():
    summary = " ".join(help_of().split("Options")[0].split())  # the description, before the command list
    assert "LLM councils" in summary and "LLM responses" in summary and "LLM judges" in summary


def test_every_url_of_the_api_in_the_docs_uses_the_port_serve_listens_on():
    port = re.search(r"--port\s+PORT.*\[default: (\d+)\]", " ".join(help_of("serve").split())).group(1)
    root = DOC.parents[1]
    used = {
        (path.name, found)
        for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        for found in re.findall(
            r"(?:localhost|127\.0\.0\.1):(\d+)/(?:graphql|review|docs|analyze-bias|audit-)", path.read_text()
        )
    }
    assert used and {found for _, found in used} == {port}, used
