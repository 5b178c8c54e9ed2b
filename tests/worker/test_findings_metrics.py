"""What the audits found, as the worker's metrics count it: flags by tenant, input and type,
alerts by tenant, type and status, and each judge's window rates."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.outcome import Outcome
from bias_audit.schemas.results import Alert, AlertWindow, AuditResult
from bias_audit.worker.metrics import WorkerMetrics


def result(audit_id: str, tenant: str, flags: list[str], **extra) -> AuditResult:
    return AuditResult(
        audit_id=audit_id,
        source=extra.pop("source", "council.session"),
        tenant_id=tenant,
        trace_id="t",
        timestamp="2026-11-26T08:00:00Z",
        event_timestamp="2026-11-26T08:00:00Z",
        bias_detected=bool(flags),
        bias_type=flags,
        bias_score={},
        bias_confidence_score=0.5,
        overall_bias_risk="high" if flags else "low",
        **extra,
    )


def alert(tenant: str, kind: str, status: str) -> Alert:
    return Alert(
        alert_id=f"{tenant}-{kind}-{status}",
        alert_type=kind,
        status=status,
        severity="warning",
        tenant_id=tenant,
        trace_id="t",
        metric="m",
        value=1.0,
        threshold=0.5,
        window=AlertWindow(start=None, end=None, sessions=10),
        detected_at="2026-11-26T08:00:00Z",
        message="m",
    )


def samples(metrics: WorkerMetrics) -> dict[tuple, float]:
    found = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_flags_alerts_and_judge_rates_are_counted():
    metrics = WorkerMetrics("redis")
    delivery = Delivery(delivery_id="1", body=b"{}", source_topic="council.sessions")
    judge_window = {
        "verdicts": 40,
        "position_consistency": {"estimate": 0.8},
        "first_position_rate": {"estimate": 0.65},
        "length_preference": {"estimate": None},
    }
    outcomes = [
        Outcome(
            delivery,
            result=result("s1", "acme", ["length_bias", "position_bias"]),
            alerts=[alert("acme", "length_bias", "firing")],
        ),
        Outcome(delivery, result=result("s2", "acme", ["length_bias"])),
        Outcome(delivery, result=result("s3", "beta", [])),
        Outcome(
            delivery,
            result=result("v1", "acme", [], source="judge.verdict", judge={"model": "judge-a", "window": judge_window}),
        ),
        Outcome(delivery, duplicate=True),
    ]
    before = time.time()
    metrics.completed("council.sessions", outcomes, time.perf_counter())
    got = samples(metrics)

    def flag(tenant, source, kind):
        return got.get(("bias_audit_bias_flags_total", (("bias_type", kind), ("source", source), ("tenant", tenant))))

    assert flag("acme", "council.session", "length_bias") == 2 and flag("acme", "council.session", "position_bias") == 1
    assert not any(name == "bias_audit_bias_flags_total" and dict(labels)["tenant"] == "beta" for name, labels in got)
    assert (
        got[
            (
                "bias_audit_alerts_total",
                (("alert_type", "length_bias"), ("severity", "warning"), ("status", "firing"), ("tenant", "acme")),
            )
        ]
        == 1
    )
    rates = {dict(labels)["rate"]: value for (name, labels), value in got.items() if name == "bias_audit_judge_rate"}
    assert rates == {"position_consistency": 0.8, "first_position_rate": 0.65}  # no estimate, no gauge
    stamp = got[
        ("bias_audit_last_batch_completed_timestamp_seconds", (("topic", "council.sessions"), ("transport", "redis")))
    ]
    assert before <= stamp <= time.time()


def test_judge_names_from_input_never_grow_the_series_past_the_bound():
    metrics = WorkerMetrics("redis", max_label_sets=5)
    delivery = Delivery(delivery_id="1", body=b"{}", source_topic="judge.verdicts")
    window = {"first_position_rate": {"estimate": 0.5}}

    def verdicts(judges: list[str]) -> list[Outcome]:
        return [
            Outcome(
                delivery,
                result=result(
                    f"v-{judge}-{n}",
                    "acme",
                    ["position_bias"],
                    source="judge.verdict",
                    judge={"model": judge, "window": window},
                ),
            )
            for n, judge in enumerate(judges)
        ]

    import random

    # three busy judges (2,000 verdicts each) among 23,000 names sent once each: the busy ones are
    # past Space-Saving's guarantee (more than 1 in 20 of all, with 4 x 5 candidates)
    stream = [f"judge-{i}" for i in range(3)] * 2_000 + [f"junk-{i}" for i in range(23_000)]
    random.Random(5).shuffle(stream)
    metrics.completed("judge.verdicts", verdicts(stream), time.perf_counter())
    got = samples(metrics)
    judges = {dict(labels)["judge"] for (name, labels) in got if name == "bias_audit_judge_rate"}
    assert len(judges) <= 5 and {"judge-0", "judge-1", "judge-2"} <= judges  # the busy ones keep their series
    flags = {
        dict(labels)["tenant"]: value for (name, labels), value in got.items() if name == "bias_audit_bias_flags_total"
    }
    assert flags == {"acme": 6_000 + 23_000}  # one (tenant, bias type) pair: nothing went to other
    many_tenants = [Outcome(delivery, result=result(f"s{i}", f"tenant-{i}", ["length_bias"])) for i in range(1_000)]
    metrics.completed("council.sessions", many_tenants, time.perf_counter())
    got = samples(metrics)
    tenants = {
        dict(labels)["tenant"]: value for (name, labels), value in got.items() if name == "bias_audit_bias_flags_total"
    }
    # the busy tenant keeps its count; the rest share `other` (a set pushed out loses its series)
    assert len(tenants) <= 6 and tenants["acme"] == 29_000 and tenants["other"] >= 700
    assert len(metrics.bounded_judges.top.counts) <= 20  # bounded memory: 4x the bound as candidates
