"""Demographic disagreement between council members answering the same query, in the CouncilEx
bias-detector report shape, without its flaws:

- whole-word, case-folded, inflection-aware matching (text.TermIndex), so "men" is never found
  in "document";
- each axis compares which *groups* each member mentions, not only whether the axis appears:
  "She is a doctor" vs "He is a doctor" differ on gender;
- the axis score does not depend on council size: for each pair of members (every ordered
  pair, a member with itself included) the total-variation distance between their group mention
  frequencies, averaged over all n^2 pairs and doubled, so an even split of two groups scores 1
  and the score depends on how members split, not on how many there are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .lexicon import Lexicons
from .text import words


@dataclass(frozen=True, slots=True)
class DisagreementConfig:
    threshold: float = 0.3
    enabled: bool = True


def _total_variation(counts: list[Counter[str]], groups: list[str]) -> np.ndarray:
    """(members, members) distances; a member mentioning none of the axis's groups is distance 1
    from one who mentions some, 0 from another who mentions none."""
    freq = np.zeros((len(counts), len(groups)))
    for i, counter in enumerate(counts):
        total = sum(counter.values())
        if total:
            freq[i] = [counter.get(g, 0) / total for g in groups]
    distance = 0.5 * np.abs(freq[:, None, :] - freq[None, :, :]).sum(axis=2)
    empty = freq.sum(axis=1) == 0
    distance[empty[:, None] ^ empty[None, :]] = 1.0
    result: np.ndarray = distance
    return result


def jaccard_distance(a: set[str], b: set[str]) -> float:
    union = a | b
    return 1.0 - len(a & b) / len(union) if union else 0.0


def member_disagreement(
    members: list[tuple[str, str]], lexicons: Lexicons, config: DisagreementConfig = DisagreementConfig()
) -> dict[str, Any]:
    """members: (member_id, response). Fewer than 2 members: nothing to compare."""
    if len(members) < 2:
        return {"flagged": False, "axes": [], "baseline_disagreement": None, "members": len(members)}
    tokens = [words(text) for _, text in members]
    token_sets = [set(t) for t in tokens]
    n = len(members)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    baseline = float(np.mean([jaccard_distance(token_sets[i], token_sets[j]) for i, j in pairs]))
    axes: list[dict[str, Any]] = []
    for axis, index in lexicons.axis_index.items():
        matches = [index.find(t) for t in tokens]
        if not any(matches):
            continue
        counts = [Counter(m.label for m in found) for found in matches]
        groups = sorted({g for c in counts for g in c})
        distance = _total_variation(counts, groups)
        score = min(1.0, 2.0 * float(distance.sum()) / (n * n))
        evidence = [
            {
                "member_id": member_id,
                "matched_terms": sorted({m.term for m in found}),
                "groups": dict[str, Any](sorted(counts[k].items())),
            }
            for k, ((member_id, _), found) in enumerate(zip(members, matches))
            if found
        ]
        axes.append({"axis": axis, "score": round(score, 4), "evidence": evidence})
    axes.sort(key=lambda a: -a["score"])
    # beyond how differently the members answer anyway: the baseline disagreement
    flagged = any(a["score"] >= config.threshold and a["score"] > baseline for a in axes)
    return {
        "flagged": flagged,
        "axes": axes,
        "baseline_disagreement": round(baseline, 4),
        "members": n,
        "threshold": config.threshold,
    }
