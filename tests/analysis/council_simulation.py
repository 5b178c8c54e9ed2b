"""Simulated council corpora with known biases, for the council-bias tests and bench/council_biases.py.

Each session: every model answers (quality ~ N(5.5, 1.5), or a repeated earlier answer of the same
model with its quality: probe sessions), every model reviews the others in its own random order,
score = quality + the reviewer's fixed offset + noise, rounded and clipped to 1-10; a bias is then
injected into one reviewer exactly as its definition reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bias_audit.analysis.digest import SessionDigest

MODELS = ("alpha", "bravo", "charlie", "delta")
OFFSETS = (0.0, -0.3, 0.2, 0.1, -0.1)  # every council has reviewers a little harsh or generous


@dataclass(frozen=True)
class Injected:
    affinity: tuple[str, str, float] | None = None  # (reviewer, model, points)
    mutual: bool = False  # the model favours the reviewer back by the same points
    anchoring: tuple[str, float] | None = None  # (reviewer, later points per point of first departure)
    style: tuple[str, float] | None = None  # (reviewer, points per unit similarity)
    inconsistent: tuple[str, float] | None = None  # (reviewer, its noise SD)


def corpus(
    rng: np.random.Generator,
    injected: Injected = Injected(),
    *,
    sessions: int = 60,
    noise: float = 1.0,
    models: tuple[str, ...] = MODELS,
    repeat_rate: float = 0.3,
    tenant: str = "sim",
    round_to: float | None = 1.0,
) -> list[SessionDigest]:
    m = len(models)
    index = {name: i for i, name in enumerate(models)}
    contents: list[tuple[int, float]] = []  # (model, quality) of each distinct answer so far
    owned: list[list[int]] = [[] for _ in range(m)]  # each model's answers among them, in order
    digests = []
    for s in range(sessions):
        content: list[int] = []
        for i in range(m):
            earlier = owned[i]
            if earlier and rng.random() < repeat_rate:
                content.append(earlier[int(rng.integers(len(earlier)))])
            else:
                contents.append((i, float(rng.normal(5.5, 1.5))))
                content.append(len(contents) - 1)
                earlier.append(content[i])
        quality = np.array([contents[c][1] for c in content])
        similarity = rng.uniform(0.05, 0.75, (m, m))
        similarity = (similarity + similarity.T) / 2
        sd = np.full(m, noise)
        if injected.inconsistent:
            sd[index[injected.inconsistent[0]]] = injected.inconsistent[1]
        raw = (
            quality[None, :]
            + np.array((OFFSETS + (0.0,) * m)[:m])[:, None]
            + rng.normal(0.0, 1.0, (m, m)) * sd[:, None]
        )
        if injected.affinity:
            r, target, size = injected.affinity
            raw[index[r], index[target]] += size
            if injected.mutual:
                raw[index[target], index[r]] += size
        if injected.style:
            r, slope = injected.style
            raw[index[r]] += slope * (similarity[index[r]] - 0.4)
        orders = [rng.permutation([j for j in range(m) if j != r]) for r in range(m)]
        if injected.anchoring:
            r, beta = injected.anchoring
            i = index[r]
            first = orders[i][0]
            consensus = np.mean([raw[k, first] for k in range(m) if k not in (i, first)])
            for later in orders[i][1:]:
                raw[i, later] += beta * (raw[i, first] - consensus)
        scores = np.clip(raw if round_to is None else np.rint(raw / round_to) * round_to, 1, 10).tolist()
        similarities = similarity.tolist()
        cells = []
        sims = []
        for r in range(m):
            for position, j in enumerate(orders[r].tolist()):
                cells.append((r, j, position, (scores[r][j] - 1) / 9, False))
                sims.append(round(similarities[r][j], 6))
        digests.append(
            SessionDigest.from_cells(
                cells,
                session_id=f"s{s:04d}",
                tenant_id=tenant,
                ts_ms=1_790_000_000_000 + s * 60_000,
                trace_id=None,
                config_version=None,
                reviewers=models,
                models=models,
                lengths=tuple(map(float, rng.integers(50, 400, m).tolist())),
                length_unit="words",
                fingerprints=tuple(f"c{c}" for c in content),
                cell_similarity=tuple(sims),
            )
        )
    return digests
