"""Per-reviewer evidence pooled over many sessions' records (leave-one-out offset, self-preference,
length appetite, primacy), each with a two-sided exact p: what the demo checks its injected biases
against. Not the report's reviewer profiles (analysis.cross_session.reviewer_profiles)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .stats import one_sample_t_p, pearson


@dataclass(frozen=True, slots=True)
class ReviewerEvidence:
    reviewer: str
    sessions: int
    offset: float | None
    offset_p: float | None
    self_preference: float | None
    self_preference_p: float | None
    length_correlation: float | None  # words vs (own score - rest-of-council mean)
    length_p: float | None
    primacy: float | None  # mean within-candidate residual at position 0 minus elsewhere
    primacy_p: float | None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def reviewer_evidence(records: Iterable[dict[str, Any]]) -> list[ReviewerEvidence]:
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_session[record["session_id"]].append(record)
    diffs: dict[str, list[float]] = defaultdict(list)
    lengths: dict[str, list[float]] = defaultdict(list)
    self_diffs: dict[str, list[float]] = defaultdict(list)
    first: dict[str, list[float]] = defaultdict(list)
    later: dict[str, list[float]] = defaultdict(list)
    sessions: dict[str, int] = defaultdict(int)
    for rows in by_session.values():
        peer: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            if not row.get("is_self_review"):
                peer[row["model_id"]].append(row)
        for reviewer in {row["reviewer_id"] for row in rows}:
            sessions[reviewer] += 1
        for model, got in peer.items():
            total = sum(r["score_value"] for r in got)
            for row in got:
                if len(got) < 2:
                    continue
                d = row["score_value"] - (total - row["score_value"]) / (len(got) - 1)
                diffs[row["reviewer_id"]].append(d)
                lengths[row["reviewer_id"]].append(float(row.get("response_length_words") or row["response_length_chars"]))
                if row.get("position") is not None:
                    (first if row["position"] == 0 else later)[row["reviewer_id"]].append(d)
        for row in rows:
            got = peer.get(row["model_id"], [])
            if row.get("is_self_review") and got:
                self_diffs[row["reviewer_id"]].append(row["score_value"] - sum(r["score_value"] for r in got) / len(got))
    profiles = []
    for reviewer in sorted(sessions):
        corr = pearson(lengths[reviewer], [d - (_mean(diffs[reviewer]) or 0.0) for d in diffs[reviewer]])
        f, l = first[reviewer], later[reviewer]
        first_mean, later_mean = _mean(f), _mean(l)
        primacy = first_mean - later_mean if first_mean is not None and later_mean is not None else None
        # Welch-free shortcut: test position-0 differences against the reviewer's other ones by
        # centring them on the mean elsewhere (the mean elsewhere is estimated from many more points).
        primacy_p = one_sample_t_p([x - later_mean for x in f]) if f and later_mean is not None else None
        profiles.append(
            ReviewerEvidence(
                reviewer=reviewer,
                sessions=sessions[reviewer],
                offset=_mean(diffs[reviewer]),
                offset_p=one_sample_t_p(diffs[reviewer]),
                self_preference=_mean(self_diffs[reviewer]),
                self_preference_p=one_sample_t_p(self_diffs[reviewer]),
                length_correlation=corr.r,
                length_p=corr.p_value,
                primacy=primacy,
                primacy_p=primacy_p,
            )
        )
    return profiles
