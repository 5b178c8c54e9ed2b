"""The consumer's per-session memo: each session's value computed once, the batch's own taken as
given, memory kept to the sessions last asked for, everything forgotten past the tenant limit."""

from __future__ import annotations

from bias_audit.consumers.window_memo import WindowMemo
from tests.simulate import Corpus

DIGESTS = Corpus(sessions=6, seed=1).digests()
IDS = [d.session_id for d in DIGESTS]


def memo(max_tenants: int = 10):
    computed: list[list[str]] = []

    def compute(digests):
        computed.append([d.session_id for d in digests])
        return [f"value of {d.session_id}" for d in digests]

    return WindowMemo(compute, max_tenants), computed


def test_each_session_is_computed_once_and_the_remembered_are_not_computed():
    values, computed = memo()
    assert values.values("acme", DIGESTS[:3]) == [f"value of {i}" for i in IDS[:3]]
    values.remember("acme", {IDS[3]: "given"})
    assert values.values("acme", DIGESTS[1:5]) == [
        f"value of {IDS[1]}",
        f"value of {IDS[2]}",
        "given",
        f"value of {IDS[4]}",
    ]
    assert computed == [IDS[:3], [IDS[4]]]


def test_a_tenant_keeps_only_the_sessions_last_asked_for():
    values, computed = memo()
    values.values("acme", DIGESTS[:4])
    values.values("acme", DIGESTS[2:4])  # the window slid: the first two are dropped
    values.values("acme", DIGESTS[:4])
    assert computed == [IDS[:4], IDS[:2]]


def test_tenants_are_kept_apart_and_all_forgotten_past_the_limit():
    values, computed = memo(max_tenants=2)
    values.values("acme", DIGESTS[:2])
    values.values("beta", DIGESTS[:2])  # another tenant's window: its own values
    values.values("acme", DIGESTS[:2])
    values.values("gamma", DIGESTS[:1])  # a third tenant: over the limit only at the next call
    values.values("acme", DIGESTS[:2])  # everything forgotten: computed again
    assert computed == [IDS[:2], IDS[:2], IDS[:1], IDS[:2]]
