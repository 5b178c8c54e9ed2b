"""The text reports on an 80-column terminal: names whole (never split or cut with an ellipsis),
no line wider than the terminal. The judges' report gives a table per judge there."""

from __future__ import annotations

import json

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
    document = json.loads(run_cli("judges", str(judge_samples.SAMPLE_FILE), "--format", "json").stdout)
    [first] = [j for j in document["judges"] if j["judge"] == judge_samples.FIRST]
    rate = first["first_position_rate"]  # its estimate and CI, as the JSON gives them, flagged
    assert rate["flagged"]
    assert f"{rate['estimate']:.2f} [{rate['ci_lower']:.2f}, {rate['ci_upper']:.2f}] FLAG" in narrow.stdout
    wide = run_cli("judges", str(judge_samples.SAMPLE_FILE), env={"COLUMNS": "220"})
    header = next(line for line in lines_of(wide.stdout) if "first shown" in line)
    assert "consistency" in header and "pref. fairness" in header  # one row of metric columns
