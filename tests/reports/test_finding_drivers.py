"""A pooled finding that comes from one reviewer names it: the demo's sessions, whose length and
first-position biases were injected into one reviewer each, name those two; a bias every
reviewer shares names nobody."""

from __future__ import annotations

import json

from bias_audit.analysis.cross_session import WindowThresholds
from bias_audit.analysis.tenant_report import tenant_report
from bias_audit.analysis.window_cells import window_cells
from bias_audit.worker import samples
from tests.services import run_cli
from tests.simulate import Corpus


def test_the_demos_pooled_findings_name_the_reviewer_each_was_injected_into(tmp_path):
    records = tmp_path / "records"
    assert run_cli("audit", str(samples.SAMPLE_FILE), "--store", str(records)).returncode == 0
    report = run_cli("report", "--input", str(records), "--tenant", "demo", "--format", "json")
    assert report.returncode == 0, report.stderr
    [tenant] = json.loads(report.stdout)["tenants"]
    assert {"LENGTH_BIAS", "POSITION_BIAS_PRIMACY"} <= set(tenant["flags"])
    assert tenant["finding_drivers"]["LENGTH_BIAS"] == samples.LENGTH_LOVING
    assert tenant["finding_drivers"]["POSITION_BIAS_PRIMACY"] == samples.PRIMACY
    assert set(tenant["finding_drivers"].values()) <= {samples.LENGTH_LOVING, samples.PRIMACY}
    text = run_cli("report", "--input", str(records), "--tenant", "demo")
    said = " ".join(text.stdout.replace("│", " ").split())
    assert f"It comes mostly from {samples.LENGTH_LOVING}" in said and f"It comes mostly from {samples.PRIMACY}" in said


def test_a_bias_every_reviewer_shares_names_nobody():
    digests = Corpus(sessions=60, seed=8, length_slope=0.6, position_effects={0: 0.8}).digests()
    report = tenant_report(window_cells(digests), 0, WindowThresholds(bootstrap_replicates=200))
    assert "LENGTH_BIAS" in report.flags and any(flag.startswith("POSITION_BIAS_") for flag in report.flags)
    assert report.finding_drivers == {}
