"""The text reports on an 80-column terminal: names whole (never split or cut with an ellipsis),
no line wider than the terminal. The judges' report gives a table per judge there."""

from __future__ import annotations

from bias_audit.worker import judge_samples, samples
from tests.services import run_cli


def lines_of(text: str) -> list[str]:
    return text.splitlines()


def test_the_council_report_keeps_every_name_whole_in_80_columns(tmp_path):
    records = tmp_path / "records"
    assert run_cli("audit", str(samples.SAMPLE_FILE), "--store", str(records)).returncode == 0
    shown = run_cli("report", "--input", str(records), "--tenant", "demo", "--verbose", env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    lines = lines_of(shown.stdout)
    assert max(len(line) for line in lines) <= 80 and "…" not in shown.stdout
    for name in samples.MODELS:  # each in the reviewers' and the models' tables, unsplit
        assert sum(name in line for line in lines) >= 2, name


def test_the_judges_report_gives_a_table_per_judge_in_80_columns_and_a_column_per_metric_when_wide():
    narrow = run_cli("judges", str(judge_samples.SAMPLE_FILE), env={"COLUMNS": "80"})
    assert narrow.returncode == 0, narrow.stderr
    assert max(len(line) for line in lines_of(narrow.stdout)) <= 80
    for judge in (judge_samples.FAIR, judge_samples.FIRST, judge_samples.VERBOSE):
        assert f"{judge} [pairwise-v1]" in narrow.stdout
    assert "0.65 [0.59, 0.70] FLAG" in narrow.stdout  # judge-first's first-position rate, as wide shows it
    wide = run_cli("judges", str(judge_samples.SAMPLE_FILE), env={"COLUMNS": "220"})
    header = next(line for line in lines_of(wide.stdout) if "first shown" in line)
    assert "consistency" in header and "pref. fairness" in header  # one row of metric columns
