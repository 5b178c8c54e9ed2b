"""Build council session events for tests from small score tables."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


def council_event(
    scores: dict[str, dict[str, float]],
    *,
    words: dict[str, int] | None = None,
    orders: dict[str, list[str]] | None = None,
    shared_order: list[str] | None = None,
    session_id: str = "s-1",
    tenant_id: str = "acme",
    timestamp: str = "2026-11-20T10:30:00Z",
    extra_reviews: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """scores: reviewer -> {model: score}. orders: reviewer -> display order (per-reviewer
    labels); shared_order: one order for everyone (session-level labels)."""
    models = sorted({m for row in scores.values() for m in row} | set(words or {}))
    words = words or {m: 10 for m in models}
    responses = [{"model": m, "response": " ".join(["w"] * words[m])} for m in models]
    session_labels: dict[str, Any] = {}
    if shared_order or not orders:
        order = shared_order or models
        session_labels = {f"Response {chr(65 + i)}": {"model": m, "display_index": i} for i, m in enumerate(order)}
    reviews = []
    for reviewer, row in scores.items():
        review: dict[str, Any] = {"reviewer": reviewer}
        if orders and reviewer in orders:
            labels = {
                f"Response {chr(65 + i)}": {"model": m, "display_index": i} for i, m in enumerate(orders[reviewer])
            }
            review["label_to_model"] = labels
        else:
            labels = session_labels
        by_model = {v["model"]: label for label, v in labels.items()}
        review["scores"] = {by_model[m]: s for m, s in row.items()}
        reviews.append(review)
    reviews.extend(extra_reviews or [])
    return {
        "schema_version": "1.0",
        "session_id": session_id,
        "tenant_id": tenant_id,
        "timestamp": timestamp,
        "score_scale": "1-10",
        "responses": responses,
        "label_to_model": session_labels,
        "reviews": reviews,
        **fields,
    }


class Observation(NamedTuple):
    """One score by name: what the tests' independent computations read."""

    reviewer: str
    model: str
    position: int | None  # display index this reviewer saw
    score: float
    is_self: bool


def observations(scores) -> list[Observation]:
    """A SessionScores' cells by name, in review order."""
    return [
        Observation(scores.reviewers[int(r)], scores.models[int(m)], None if p < 0 else int(p), score, own == 1.0)
        for r, m, score, p, own in scores.cell_tuples()
    ]


def two_way_prediction(table, reviewer, model):
    """(prediction of reviewer x model from score ~ reviewer + model over the peer table, its
    variance factor x0' (X'X)+ x0), or None when not estimable: explicit dummies and numpy's
    lstsq, not the audit's algebra."""
    reviewers = sorted(table)
    models = sorted({m for row in table.values() for m in row})
    rows, y = [], []
    for r in reviewers:
        for m, score in table[r].items():
            x = np.zeros(len(reviewers) + len(models))
            x[reviewers.index(r)] = x[len(reviewers) + models.index(m)] = 1.0
            rows.append(x)
            y.append(score)
    design = np.array(rows)
    beta = np.linalg.lstsq(design, np.array(y), rcond=None)[0]
    x0 = np.zeros(design.shape[1])
    x0[reviewers.index(reviewer)] = x0[len(reviewers) + models.index(model)] = 1.0
    xtx = design.T @ design
    if not np.allclose(x0 @ np.linalg.pinv(xtx) @ xtx, x0, atol=1e-6):
        return None  # not estimable: the peer scores do not link the reviewer to the model's scorers
    return float(x0 @ beta), float(x0 @ np.linalg.pinv(xtx) @ x0)


def read_all(reader, url: str, **filters) -> list:
    """Everything a store reader (storage.postgres.read_records, read_interactions) yields, on a
    connection of its own."""
    from bias_audit.storage.postgres import connect

    with connect(url) as connection:
        return list(reader(connection, **filters))
