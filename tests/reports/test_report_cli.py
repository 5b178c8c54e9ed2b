"""`bias-audit report` end to end: every format, the window options, errors with exit 2."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys

import orjson
import pytest
from typer.testing import CliRunner

from bias_audit.worker.cli import app
from tests.simulate import Corpus, digest_records

runner = CliRunner()


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    directory = tmp_path_factory.mktemp("records")
    corpus = Corpus(
        sessions=80,
        seed=9,
        reviewer_offsets={1: -1.5},
        position_effects={0: 0.6},
        length_slope=0.3,
        config_version=["1.0"] * 60 + ["1.1"] * 20,
    )
    with open(directory / "records-w1.jsonl", "wb") as handle:
        for digest in corpus.digests():
            handle.write(b"".join(orjson.dumps(r) + b"\n" for r in digest_records(digest)))
    return directory


def report(*args: str):
    return runner.invoke(app, ["report", *args], catch_exceptions=False)


def test_json_is_one_document_with_every_section(records):
    result = report("--input", str(records), "--format", "json", "--sessions", "50")
    assert result.exit_code == 0
    document = json.loads(result.stdout)  # one valid document
    assert document["report_type"] == "bias.audit.report" and document["window_sessions"] == 50
    [tenant] = document["tenants"]
    assert tenant["sessions"] == 50 and tenant["confidence"] == "high"
    assert "HARSH:vendor1/model-1" in tenant["flags"] and "POSITION_BIAS_PRIMACY" in tenant["flags"]
    for section in (
        "length_correlation",
        "length_control",
        "position",
        "randomization",
        "reviewers",
        "agreement",
        "trends",
        "change_points",
        "timeline",
    ):
        assert section in tenant
    assert "length_points" not in tenant  # chart data only with --verbose
    # the config changes at session 60, inside the window (sessions 30-79)
    [change] = tenant["change_points"]
    assert (change["from_version"], change["to_version"]) == ("1.0", "1.1")


def test_text_fits_80_columns_and_names_the_flags(records, tmp_path):
    out = tmp_path / "report.txt"
    result = report("--input", str(records), "--verbose", "--output", str(out))  # a file: plain text, 80 wide
    assert result.exit_code == 0
    text = out.read_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "HARSH" in text and "Krippendorff" in text and "Swapped pairs" in text and "1.0->1.1" in text


def test_csv_is_one_table(records):
    result = report("-i", str(records), "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    metrics = {row["metric"] for row in rows}
    assert {
        "length_correlation",
        "reviewer_offset",
        "position_effect",
        "model_length_controlled_score",
        "krippendorff_alpha",
        "randomization_chi_square",
    } <= metrics
    harsh = next(r for r in rows if r["metric"] == "reviewer_offset" and r["subject"] == "vendor1/model-1")
    assert float(harsh["point_estimate"]) < -1.0 and harsh["flagged"] == "True"


def test_html_is_self_contained(records, tmp_path):
    out = tmp_path / "report.html"
    result = report("-i", str(records), "-f", "html", "-o", str(out))
    assert result.exit_code == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") >= 4
    # nothing to fetch: no scripts, links, images or remote URLs (the SVG namespace is a name, not a fetch)
    assert not re.search(r"<script|<link|<img|@import|url\(", page)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)
    # a reader who is not a statistician gets the findings in plain words first
    summary = page.split('<section class="summary"', 1)[1].split("</section>", 1)[0]
    assert "vendor1/model-1 scores lower than the other reviewers do." in summary
    assert "Answers shown first score higher" in summary
    assert page.index('class="summary"') < page.index("<h3>Window metrics</h3>")


def test_tenant_filter_and_unlimited_window(records):
    result = report("-i", str(records), "-f", "json", "--sessions", "0", "--days", "0", "--tenant", "acme")
    [tenant] = json.loads(result.stdout)["tenants"]
    assert tenant["sessions"] == 80
    none = json.loads(report("-i", str(records), "-f", "json", "--tenant", "other").stdout)
    assert none["tenants"] == []


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ((), "no input"),
        (("--input", "/nonexistent/records"), "no such file"),
        (("--input", "x.jsonl", "--redis", "redis://localhost:1"), "not both"),
        (("--input", "x", "--sessions", "-3"), "must be 0"),
        (("--input", "x", "--format", "pdf"), "pdf"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, reason):
    result = report(*args)
    assert result.exit_code == 2
    assert reason in result.output


@pytest.fixture(scope="module")
def three_sessions(tmp_path_factory):
    directory = tmp_path_factory.mktemp("few")
    with open(directory / "records-w1.jsonl", "wb") as handle:
        for digest in Corpus(sessions=3, seed=2).digests():
            handle.write(b"".join(orjson.dumps(r) + b"\n" for r in digest_records(digest)))
    return directory


def test_a_window_still_collecting_data_says_so_instead_of_a_clean_bill(three_sessions):
    html = report("--input", str(three_sessions), "--format", "html").stdout
    assert "no bias flagged" not in html
    [badge] = re.findall(r'<span class="(?:ok|collecting)">([^<]*)</span>', html)
    assert badge.startswith("collecting data") and "3 sessions" in badge
    assert "Too early to tell: 3 sessions so far" in html
    # the table says "collecting data": the chart draws the points but no fitted line
    assert (
        "Length vs score (collecting data: no fitted line)" in html
        and "<line " not in html.split("Length vs score")[1].split("</svg>")[0]
    )
    assert "<td>ok</td>" not in html  # nothing estimated, nothing "ok"
    assert "no model scores yet (collecting data)" in html
    text = report("--input", str(three_sessions), "--format", "text").stdout
    assert "no bias flagged" not in text and "collecting data: 3 sessions in the window" in text
    assert " ok " not in text and "no model scores yet (collecting data)" in text


def test_the_text_report_has_the_columns_the_html_has(records):
    text = report("--input", str(records), "--format", "text").stdout
    for column in ("n / sessions", "mean", "r peers", "self-pref", "LC rank"):
        assert column in text, column
    html = report("--input", str(records), "--format", "html").stdout
    assert "<th>n / sessions</th>" in html and "<th>mean score</th>" in html and "<th>r with peers</th>" in html


HOSTILE_IDS = {  # reviewer / model ids a producer could send, and what must never happen with them
    "[/]": "closes a markup tag that was never opened: rich raises, the report dies",
    "[link=http://evil.example]judge[/link]": "becomes a terminal hyperlink",
    "\x1b]8;;http://evil.example\x07judge\x1b]8;;\x07": "an OSC 8 hyperlink sent straight to the terminal",
    "\x1b[2J\x1b[31mjudge": "clears the screen, turns the text red",
    '=HYPERLINK("http://evil.example")': "a formula in a spreadsheet",
    "+cmd|' /C calc'!A0": "a DDE formula",
    "-2+3": "a formula",
    "@SUM(1)": "a formula",
    "\tjudge": "a formula after the tab",
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hostile")
    names = list(HOSTILE_IDS)
    with open(directory / "records-w1.jsonl", "wb") as handle:
        for digest in Corpus(sessions=12, seed=4, models=5).digests():
            for record in digest_records(digest):
                # reviewers "vendorK/model-K" become names[K], models names[K + 4]: every name is used
                record["reviewer_id"] = names[int(record["reviewer_id"][-1])]
                record["model_id"] = names[int(record["model_id"][-1]) + 4]
                handle.write(orjson.dumps(record) + b"\n")
    return directory


def test_ids_are_printed_as_plain_escaped_text_in_the_text_report(hostile):
    result = report("--input", str(hostile), "--format", "text", "--verbose")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert result.stdout.count("\\x1b") >= 3  # shown as text, in the reviewer and model tables
    assert "[/]" in result.stdout and "[link=http://evil.example]" in result.stdout


def test_csv_cells_a_spreadsheet_would_run_are_neutralized(hostile):
    text = report("--input", str(hostile), "--format", "csv").stdout
    assert "\x1b" not in text and "\x07" not in text and "\\x1b]8;;" in text  # a terminal printing it runs nothing
    rows = list(csv.reader(io.StringIO(text)))
    subjects = {row[4] for row in rows[1:]}
    assert not any(
        cell.startswith(("=", "+", "-", "@", "\t", "\r"))
        for row in rows[1:]
        for cell in row
        if not re.fullmatch(r"-?[0-9.e+-]+", cell)
    )
    assert {'\'=HYPERLINK("http://evil.example")', "'+cmd|' /C calc'!A0", "'-2+3", "'@SUM(1)", "'\tjudge"} & subjects


@pytest.mark.parametrize(("named", "backend"), [(None, "jemalloc"), ("system", "system")])
def test_the_read_takes_arrows_memory_from_jemalloc_unless_arrows_own_setting_names_a_pool(records, named, backend):
    """jemalloc gives the read's freed Arrow buffers back; a pool the user names is kept."""
    env = {key: value for key, value in os.environ.items() if key != "ARROW_DEFAULT_MEMORY_POOL"}
    if named:
        env["ARROW_DEFAULT_MEMORY_POOL"] = named
    code = (
        "import sys, pyarrow as pa\n"
        "from bias_audit.reports.run import stored_windows\n"
        "windows, _ = stored_windows([sys.argv[1]], None, None, None)\n"
        "print(len(windows), pa.default_memory_pool().backend_name)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(records)], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["1", backend]
