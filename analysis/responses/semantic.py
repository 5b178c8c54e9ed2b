"""Semantic comparisons over sentence embeddings (unit vectors from the optional embedding
backend): cosine similarity, and clusters of council members' answers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, d) unit vectors


def member_clusters(member_ids: Sequence[str], vectors: np.ndarray, similarity: float = 0.7) -> dict[str, Any]:
    """Average-linkage clusters at cosine >= `similarity`: members whose answers say the same thing
    share a cluster; `min_similarity` is the least similar pair."""
    # only workers with the embedding extra cluster: the others start without scipy.cluster
    from scipy.cluster.hierarchy import fcluster, linkage

    cosine = np.clip(vectors @ vectors.T, -1.0, 1.0)
    if len(member_ids) < 2:
        return {"clusters": [list(member_ids)], "min_similarity": None}
    distance = 1.0 - cosine[np.triu_indices(len(member_ids), 1)]
    labels = fcluster(linkage(np.maximum(distance, 0.0), method="average"), t=1.0 - similarity, criterion="distance")
    groups: dict[int, list[str]] = {}
    for member, label in zip(member_ids, labels):
        groups.setdefault(int(label), []).append(member)
    return {
        "clusters": sorted(groups.values(), key=lambda g: (-len(g), g)),
        "min_similarity": round(float(cosine[np.triu_indices(len(member_ids), 1)].min()), 4),
    }
