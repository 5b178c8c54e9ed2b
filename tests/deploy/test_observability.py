"""The shipped alert rules and dashboard: promtool checks the rules and runs their unit tests (each
alert fires on one input and stays quiet on another), and every metric the dashboard and the
rules name is one a running worker or `serve` exposes on /metrics."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from bias_audit.worker.composition import api_app
from bias_audit.worker.embedded_redis import free_port
from bias_audit.worker.judge_samples import generate_verdicts
from bias_audit.worker.samples import generate_sessions
from bias_audit.worker.settings import Settings
from tests.conftest import IN_CI
from tests.integration.harness import VERDICTS, RedisHarness, wait_for
from tests.services import ROOT

PROMETHEUS = ROOT / "deploy" / "prometheus"
DASHBOARD = ROOT / "deploy" / "grafana" / "bias-audit.json"
# metrics of Prometheus itself and of Google's exporter, which rules may name beside ours
NOT_OURS = {"up", "stackdriver_pubsub_subscription_pubsub_googleapis_com_subscription_num_undelivered_messages"}
PROMQL_WORDS = {
    "sum",
    "max",
    "min",
    "avg",
    "count",
    "by",
    "without",
    "on",
    "ignoring",
    "and",
    "or",
    "unless",
    "rate",
    "increase",
    "deriv",
    "histogram_quantile",
    "time",
    "label_values",
    "group_left",
    "group_right",
}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if IN_CI:
            pytest.fail("CI=true but promtool is missing (apt-get install prometheus)")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return found


def named_metrics(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: what is left once strings, label matchers,
    ranges, grouping clauses, numbers and PromQL's own words are taken out."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"label_values\(([^,)]+),[^)]*\)", r"\1", expr)  # Grafana's: (metric, label)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    return {word for word in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr) if word not in PROMQL_WORDS}


def exposed(text: str) -> set[str]:
    """Every sample name /metrics can show: those it shows, and each family's by its TYPE line
    (a labelled family shows no sample before its first observation)."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names |= {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"} if kind == "histogram" else {name}
        elif line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


def test_the_rules_pass_promtools_check_and_unit_tests():
    tool = promtool()
    checked = subprocess.run(
        [tool, "check", "rules", "bias-audit.rules.yml"], cwd=PROMETHEUS, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [tool, "test", "rules", "bias-audit.rules.test.yml"], cwd=PROMETHEUS, capture_output=True, text=True
    )
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_every_alert_has_a_runbook_and_a_firing_and_a_quiet_case():
    rules = yaml.safe_load((PROMETHEUS / "bias-audit.rules.yml").read_text())
    alerts = {rule["alert"]: rule for group in rules["groups"] for rule in group["rules"] if "alert" in rule}
    tests = yaml.safe_load((PROMETHEUS / "bias-audit.rules.test.yml").read_text())["tests"]
    cases = [case for test in tests for case in test["alert_rule_test"]]
    for name, rule in alerts.items():
        assert rule["annotations"]["runbook"].strip() and rule["labels"]["severity"] in {"info", "warning", "critical"}
        mine = [case for case in cases if case["alertname"] == name]
        assert any(case["exp_alerts"] for case in mine), f"{name} never fires in the tests"
        assert any(not case["exp_alerts"] for case in mine), f"{name} is never shown quiet"
    assert {
        "BiasAuditWorkerDown",
        "BiasAuditWorkerStalled",
        "BiasAuditConsumerLagGrowing",
        "BiasAuditPubSubBacklogGrowing",
        "BiasAuditDeadLetters",
        "BiasAuditProcessingSlow",
        "BiasAuditBiasAlertsFiring",
        "BiasAuditJudgeDrift",
    } <= set(alerts)


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (topic, le) (rate(a_seconds_bucket{job="x", le=~"1"}[5m]))', {"a_seconds_bucket"}),
        ("time() - max by (instance) (b_timestamp)", {"b_timestamp"}),
        ('x > 1000 and on (instance, topic) y{z="a b"} > 0', {"x", "y"}),
        ("label_values(c_total, tenant)", {"c_total"}),
    ],
)
def test_metric_names_are_read_out_of_promql(expr, names):
    assert named_metrics(expr) == names


@pytest.mark.redis
def test_every_metric_the_dashboard_and_the_rules_name_is_exposed(tmp_path, redis_url):
    port = free_port()
    harness = RedisHarness(tmp_path, redis_url)
    try:
        harness.start(consume="all", ops_port=port)
        sessions = [json.dumps({**s, "tenant_id": "demo"}).encode() for s in generate_sessions(5, seed=91)]
        verdicts = [json.dumps(v).encode() for v in generate_verdicts(5, seed=92)]
        harness.publish(sessions)
        harness.publish(verdicts, topic=VERDICTS)
        harness.results(len(sessions) + len(verdicts))
        wait_for(
            lambda: "bias_audit_judge_rate{" in httpx.get(f"http://127.0.0.1:{port}/metrics").text,
            what="the judges' rates on /metrics",
        )
        worker_metrics = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    finally:
        assert harness.stop() == [0]
    with TestClient(api_app(Settings(data_dir=tmp_path, consumer_name="api")), base_url="http://localhost") as client:
        client.get("/healthz")
        api_metrics = client.get("/metrics").text
    available = exposed(worker_metrics) | exposed(api_metrics)
    assert "bias_audit_bias_flags_total" in available and "bias_audit_http_seconds_bucket" in available

    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["panels"]
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = named_metrics(target["expr"])
            assert names, f"{panel['title']}: {target['expr']} names no metric"
            assert names <= available, f"{panel['title']}: {names - available} not exposed"
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            assert named_metrics(variable["definition"]) <= available
    rules = yaml.safe_load((PROMETHEUS / "bias-audit.rules.yml").read_text())
    recorded = {rule["record"] for group in rules["groups"] for rule in group["rules"] if "record" in rule}
    for group in rules["groups"]:
        for rule in group["rules"]:
            missing = named_metrics(rule["expr"]) - available - recorded - NOT_OURS
            assert not missing, f"{rule.get('alert') or rule.get('record')}: {missing} not exposed"
