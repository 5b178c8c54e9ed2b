"""The per-session audit of one session in plain Python: the same numbers as the vectorized batch
audit (analysis.session_audit), where a batch of one would pay numpy's per-call overhead on
~300 tiny arrays (~600 us) for what a few loops over a council's 25 scores do in a tenth of it.

Each quantity mirrors a line of audit_batch; tests/analysis/test_batch_audit.py checks the two
agree on 400 random sessions, and the oracle tests run on both.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .observations import SessionScores
from .reviewer_offset import ROUNDING
from .session_noise import TIE
from .special import fdtrc, ndtr, stdtr
from .stats import pearson_r, sample_std

INF = math.inf


def _average_ranks(xs: list[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank (scipy.stats.rankdata 'average'):
    #smaller + (#equal + 1) / 2."""
    ordered = sorted(xs)
    ranks = []
    for x in xs:
        below = bisect_left(ordered, x)
        ranks.append(below + (bisect_right(ordered, x) - below + 1) / 2.0)
    return ranks


def _t_or_inf(value: float, scale: float) -> float:
    if scale > 0.0:
        return value / scale
    return 0.0 if value == 0.0 else math.copysign(INF, value)


def _grounded_inverse(laplacian: list[list[float]], members: list[int]) -> list[list[float]] | None:
    """The inverse of the members' Laplacian with the first member grounded (its row and column
    dropped), by Gauss-Jordan elimination in place; None when the members are not one connected
    part (a zero pivot). A connected part's grounded Laplacian is symmetric positive definite, so
    the pivots are positive without row exchanges."""
    rest = members[1:]
    size = len(rest)
    matrix = [[laplacian[a][b] for b in rest] for a in rest]
    for k in range(size):  # in place: column k of the identity takes the place of column k
        head = matrix[k]
        if head[k] < 1e-12:
            return None
        scale = 1.0 / head[k]
        head[k] = 1.0
        head = matrix[k] = [v * scale for v in head]
        for i in range(size):
            row = matrix[i]
            factor = row[k]
            if i != k and factor:
                row[k] = 0.0
                matrix[i] = [a - factor * b for a, b in zip(row, head)]
    return matrix


@dataclass(frozen=True, slots=True)
class _Part:
    """Reviewers linked by chains of shared responses, and what the fit needs of their Laplacian."""

    members: list[int]  # the first is grounded
    inverse: list[list[float]]  # the grounded Laplacian's inverse (_grounded_inverse)
    row: dict[int, int]  # member -> its row of the inverse (the grounded one has none)
    row_sums: list[float]  # of the inverse
    total: float  # the sum of every entry of the inverse


@dataclass(frozen=True, slots=True)
class _Design:
    """What a two-way fit needs of which reviewers scored which response, not of the scores."""

    parts: list[_Part]


@lru_cache(maxsize=256)
def _design(scorers_of: tuple[tuple[int, ...], ...], reviewers: int) -> _Design:
    """The design's Laplacian solved once: a council sends the same design session after session
    (the same members scoring each other's answers). Callers never mutate what it returns."""
    active = sorted({r for linked in scorers_of for r in linked})
    laplacian = [[0.0] * reviewers for _ in range(reviewers)]
    for linked in scorers_of:
        share = 1.0 / len(linked)
        for r in linked:
            row = laplacian[r]
            row[r] += 1.0
            for q in linked:
                row[q] -= share
    parts = [active] if active else []
    inverses = [_grounded_inverse(laplacian, active)] if active else []
    if inverses and inverses[0] is None:  # a council in separate parts: each on its own
        parts = _connected_parts(scorers_of, active)
        inverses = [_grounded_inverse(laplacian, members) for members in parts]
    solved: list[_Part] = []
    for members, inverse in zip(parts, inverses):
        assert inverse is not None  # a connected part has a nonsingular grounded system
        row_sums = [sum(row) for row in inverse]
        solved.append(_Part(members, inverse, {q: i for i, q in enumerate(members[1:])}, row_sums, sum(row_sums)))
    return _Design(solved)


@dataclass(frozen=True, slots=True)
class _Absorbed:
    """The two-way fit score = reviewer + response with the responses absorbed."""

    per_response: dict[int, list[tuple[int, float]]]  # response -> [(reviewer, score)]
    totals: dict[int, tuple[float, int]]  # response -> (sum of its scores, how many)
    parts: list[_Part]  # of the design, shared by every session with it: read only
    effects: dict[int, float]  # each part's effects sum to zero


def _absorbed(cells: list[tuple[int, int, float]], reviewers: int) -> _Absorbed:
    per_response: dict[int, list[tuple[int, float]]] = {}
    for r, m, s in cells:
        per_response.setdefault(m, []).append((r, s))
    design = _design(tuple(tuple([q for q, _ in scorers]) for scorers in per_response.values()), reviewers)
    rhs = [0.0] * reviewers
    totals: dict[int, tuple[float, int]] = {}
    for m, scorers in per_response.items():
        totals[m] = (sum(s for _, s in scorers), len(scorers))
        mean = totals[m][0] * (1.0 / len(scorers))
        for r, s in scorers:
            rhs[r] += s - mean
    effects: dict[int, float] = {}
    for part in design.parts:
        grounded_rhs = [rhs[r] for r in part.members[1:]]
        values = [0.0, *(sum(a * b for a, b in zip(row, grounded_rhs)) for row in part.inverse)]
        mean = sum(values) / len(values)
        for r, value in zip(part.members, values):
            effects[r] = value - mean
    return _Absorbed(per_response, totals, design.parts, effects)


@dataclass(frozen=True, slots=True)
class OneFit:
    """A session's two-way fit on its peer scores (analysis.session_noise.two_way_fit's numbers)."""

    absorbed: _Absorbed
    rss: float
    df: int
    # the session's cells as (reviewer, model, score, display index or -1, self-review), decoded
    # once here for the audit and the tests
    cells: list[tuple[int, int, float, int, bool]]
    levels: dict[int, float]  # per response: its level in the fit (the mean of score - reviewer effect)


def two_way_one(scores: SessionScores) -> OneFit:
    flat = scores.cells
    cells = list(zip(map(int, flat[0::5]), map(int, flat[1::5]), flat[2::5], map(int, flat[3::5]),
                     [own == 1.0 for own in flat[4::5]]))
    peer = [(r, m, s) for r, m, s, _, own in cells if not own]
    absorbed = _absorbed(peer, len(scores.reviewers))
    rss = 0.0
    effects = absorbed.effects
    levels: dict[int, float] = {}
    for m, scorers in absorbed.per_response.items():
        level = levels[m] = sum(s - effects[r] for r, s in scorers) / len(scorers)
        rss += sum((d := s - effects[r] - level) * d for r, s in scorers)
    # rank: reviewers + responses - connected parts (a response links its scorers' parts)
    rank = len(effects) + len(absorbed.per_response) - len(absorbed.parts)
    return OneFit(absorbed, rss, len(peer) - rank, cells, levels)


def _tails(zs: list[float], df: float) -> list[float]:
    """Upper tails of the t (df > 0) or normal distribution, in one ufunc call for all of a
    session's tests (a call on one scalar costs about as much as on ten)."""
    if not zs:
        return []
    negated = [-z for z in zs]
    tails: list[float] = (stdtr(df, negated) if df > 0 else ndtr(negated)).tolist()
    return tails


def reviewer_tests_one(scores: SessionScores, fit: OneFit, sd: float, df: float, offset_threshold: float,
                       self_threshold: float, alpha: float) -> dict[str, Any]:
    """analysis.session_noise.reviewer_tests for one session in plain Python: the same numbers
    (tests/analysis/test_batch_audit.py checks both paths agree). sd and thresholds in the
    session's units."""
    names = scores.reviewers
    cells = fit.cells
    per_response = fit.absorbed.per_response
    totals = fit.absorbed.totals
    # per reviewer: the sum of its differences from the rest's means, of their SE factors, and k
    differences, factors, counted = [0.0] * len(names), [0.0] * len(names), [0.0] * len(names)
    tested: list[int] = []  # in order of first appearance
    for r, m, s, _, own in cells:
        if own:
            continue
        total, n = totals[m]
        if n < 2:
            continue
        if not counted[r]:
            tested.append(r)
        differences[r] += s - (total - s) / (n - 1)
        factors[r] += 1.0 + 1.0 / (n - 1)
        counted[r] += 1.0
    loo = {r: differences[r] / counted[r] for r in tested}
    offset_z = {r: abs(loo[r]) / (sd * math.sqrt(factors[r]) / counted[r]) for r in tested}
    absorbed = fit.absorbed
    effects = absorbed.effects
    part_of = {r: part for part in absorbed.parts for r in part.members}
    one_part = len(absorbed.parts) == 1
    self_pref: dict[int, float] = {}
    self_z: dict[int, float] = {}
    for r, m, s, _, own in cells:
        scorers = per_response.get(m)
        if not own or r not in effects or not scorers or (
                not one_part and any(part_of[q] is not part_of[r] for q, _ in scorers)):
            continue  # not predictable from the peer scores
        n = len(scorers)
        level = fit.levels[m]
        # Var(a_r + b_m) / sd^2 = 1 / n_m + g' Q g, g = e_r - mean of the scorers' e: a contrast,
        # so any generalized inverse Q of the Laplacian gives it; Q = the grounded inverse, padded
        # with zeros for the grounded reviewer.
        part = part_of[r]
        inverse, position = part.inverse, part.row
        i = position.get(r)
        if n == len(part.members) - 1:  # every other member scored it: g = (1 + 1/n) e_r - 1/n
            a = 1.0 + 1.0 / n
            quadratic = ((a * a * inverse[i][i] - 2.0 * a * part.row_sums[i] / n if i is not None else 0.0)
                         + part.total / (n * n))
        else:
            g: dict[int, float] = {}
            for q, _ in scorers:
                if q in position:
                    g[position[q]] = g.get(position[q], 0.0) - 1.0 / n
            if i is not None:
                g[i] = g.get(i, 0.0) + 1.0
            quadratic = sum(ga * gb * inverse[a_][b_] for a_, ga in g.items() for b_, gb in g.items())
        self_pref[r] = s - effects[r] - level
        self_z[r] = self_pref[r] / (sd * math.sqrt(1.0 + max(1.0 / n + quadratic, 0.0)))
    p_values = _tails([*offset_z.values(), *self_z.values()], df)
    offset_p = dict(zip(offset_z, p_values))
    self_p = dict(zip(self_z, p_values[len(offset_z):]))
    largest = max((abs(v) for v in loo.values()), default=0.0)
    flagged = [r for r in loo if offset_p[r] < alpha / len(loo) and abs(loo[r]) >= largest - TIE]
    return {  # by name, in the session's reviewer order, as the vectorized path's rows
        "loo": {names[r]: loo[r] for r in sorted(loo)}, "offset_p": {names[r]: offset_p[r] for r in sorted(loo)},
        "harsh": [names[r] for r in flagged if loo[r] <= -offset_threshold],
        "generous": [names[r] for r in flagged if loo[r] >= offset_threshold],
        "self_preference": {names[r]: self_pref[r] for r in sorted(self_pref)},
        "self_p": {names[r]: self_p[r] for r in sorted(self_pref)},
        "preferring": [names[r] for r, v in self_pref.items()
                       if self_p[r] < alpha / len(self_pref) and v >= self_threshold],
    }


def _connected_parts(scorers_of: tuple[tuple[int, ...], ...], active: list[int]) -> list[list[int]]:
    """Reviewers grouped by whether a chain of shared responses links them."""
    part = {r: r for r in active}

    def root(r: int) -> int:
        while part[r] != r:
            part[r] = part[part[r]]
            r = part[r]
        return r

    for linked in scorers_of:
        first = root(linked[0])
        for r in linked[1:]:
            part[root(r)] = first
    groups: dict[int, list[int]] = {}
    for r in active:
        groups.setdefault(root(r), []).append(r)
    return list(groups.values())


def audit_one(scores: SessionScores, threshold: float, length_threshold: float, alpha: float,
              fit: OneFit) -> dict[str, Any]:
    """The session's audit values but the reviewer tests (analysis.session_noise: those run on the
    batch's arrays) and its position residuals, under "_residuals"."""
    reviewers, models = scores.reviewers, scores.models
    n_models = len(models)
    peer = [(r, m, s, p) for r, m, s, p, own in fit.cells if not own]

    # each model's peer scores: how many and their sum, as the fit summed them
    model_n = [0] * n_models
    model_total = [0.0] * n_models
    for m, (total, count) in fit.absorbed.totals.items():
        model_total[m], model_n[m] = total, count
    given: dict[int, list[float]] = {}  # reviewer -> the peer scores it gave
    # position: the peer scores with a display index, and each model's first and last index
    placed: list[tuple[int, int, float, int]] = []
    placed_total = [0.0] * n_models
    placed_n = [0] * n_models
    first_at = [n_models] * n_models
    last_at = [-1] * n_models
    for cell in peer:
        r, m, s, p = cell
        if r in given:
            given[r].append(s)
        else:
            given[r] = [s]
        if p >= 0:
            placed.append(cell)
            placed_total[m] += s
            placed_n[m] += 1
            if p < first_at[m]:
                first_at[m] = p
            if p > last_at[m]:
                last_at[m] = p
    model_mean = [t / max(n, 1) for t, n in zip(model_total, model_n)]
    scored = [m for m in range(n_models) if model_n[m] > 0]

    # Length
    words = [float(c.words) for c in scores.candidates.values()]
    xs, ys = [words[m] for m in scored], [model_mean[m] for m in scored]
    length_n = len(scored)
    length_r = pearson_r(xs, ys) if length_n >= 3 else None
    spearman = pearson_r(_average_ranks(xs), _average_ranks(ys)) if length_n >= 3 else None
    df_length = length_n - 2.0
    if length_r is not None:
        length_t = (math.copysign(INF, length_r) if abs(length_r) >= 1.0
                    else length_r * math.sqrt(max(df_length, 0.0)) / math.sqrt(1.0 - length_r * length_r))

    # Reviewers
    reviewer_order = sorted(given)
    means = {r: sum(given[r]) / len(given[r]) for r in reviewer_order}
    stds = {r: sample_std(given[r]) for r in reviewer_order}

    loo = [(r, m, s) for r, m, s, _ in peer if model_n[m] > 1]
    # the peer fit's effects (a response scored once adds nothing to the absorbed system) of the
    # reviewers with a response someone else scored too: what the vectorized path's
    # analysis.reviewer_offset.reviewer_effects gives (each part centred)
    in_loo = {r for r, _, _ in loo}
    effects = {r: e for r, e in fit.absorbed.effects.items() if r in in_loo}
    offsets: dict[int, float] = {}
    ordered = sorted(effects.values())
    others = len(ordered) - 1
    half = others // 2  # statistics.median's rule over the others, without building their list

    def other(k: int, skipped: int) -> float:  # the k-th smallest of the others
        return ordered[k] if k < skipped else ordered[k + 1]

    for r, effect in effects.items():
        skipped = bisect_left(ordered, effect)  # one copy of r's effect leaves (equal copies are alike)
        if others == 0:
            offset = 0.0
        elif others % 2:
            offset = effect - other(half, skipped)
        else:
            offset = effect - (other(half - 1, skipped) + other(half, skipped)) / 2
        offsets[r] = 0.0 if abs(offset) < ROUNDING else offset
    diffs: dict[int, tuple[list[float], list[float]]] = {}  # reviewer -> (its scores, the rest's means)
    for r, m, s in loo:
        if r not in diffs:
            diffs[r] = ([], [])
        given_scores, rests = diffs[r]
        given_scores.append(s)
        rests.append((model_total[m] - s) / (model_n[m] - 1.0))  # model_n[m] > 1 in loo
    agreements: list[float] = []
    for r in sorted(diffs):
        given_scores, rests = diffs[r]
        if len(rests) >= 3:
            agreement = pearson_r(given_scores, rests)
            if agreement is not None:
                agreements.append(agreement)
    length_p = None
    if length_r is not None:
        length_p = 2.0 * float(stdtr(df_length, -abs(length_t)))

    # Position (placed, with its totals, gathered above)
    identifiable = any(last > first for first, last in zip(first_at, last_at))
    placed.sort()  # the batch audit's (reviewer, model) order; the pairs are unique
    residuals = [(p, s - placed_total[m] / placed_n[m]) for r, m, s, p in placed]
    group_total: dict[int, float] = {}
    group_n: dict[int, int] = {}
    for p, e in residuals:
        if p in group_n:
            group_total[p] += e
            group_n[p] += 1
        else:
            group_total[p] = e
            group_n[p] = 1
    group_mean = {g: group_total[g] / group_n[g] for g in group_total}
    within = sum((d := e - group_mean[p]) * d for p, e in residuals)
    total_n = len(residuals)
    k_groups = len(group_n)
    grand = sum(group_mean[g] * group_n[g] for g in group_n) / max(total_n, 1)
    between = sum(group_n[g] * (group_mean[g] - grand) ** 2 for g in group_n)
    df_between = k_groups - 1
    df_within = total_n - k_groups - max(sum(1 for n in placed_n if n) - 1, 0)
    if within > 0.0:
        f = (between / max(df_between, 1)) / (within / max(df_within, 1))
        position_p: float | None = float(fdtrc(max(df_between, 1), max(df_within, 1), f))
    else:
        position_p = 0.0 if between > 0.0 else None
    position_tested = identifiable and df_between >= 1 and df_within >= 1 and position_p is not None
    effect_var = None
    if identifiable and k_groups >= 2:
        effect_mean = sum(group_mean.values()) / k_groups
        effect_var = sum((v - effect_mean) ** 2 for v in group_mean.values()) / max(k_groups - 1, 1)

    names = reviewers
    length_detected = length_p is not None and abs(length_r or 0.0) > length_threshold and length_p < alpha
    position_detected = bool(position_tested and position_p is not None and position_p < alpha)
    return {
        "length_score_correlation": length_r,
        "length_score_p_value": length_p,
        "length_score_spearman": spearman,
        "length_score_sample_size": length_n,
        "length_bias_detected": length_detected,
        "position_identifiable": identifiable,
        "position_score_variance": effect_var,
        "position_effects": {str(g): group_mean[g] for g in sorted(group_mean)} if identifiable else {},
        "position_p_value": position_p if position_tested else None,
        "position_bias_detected": position_detected,
        "reviewer_mean_scores": {names[r]: v for r, v in means.items()},
        "reviewer_score_std": {names[r]: v for r, v in stds.items()},
        "reviewer_offsets": {names[r]: offsets[r] for r in sorted(diffs)},
        "reviewer_agreement": sum(agreements) / len(agreements) if agreements else None,
        "calibration_threshold": threshold,
        "_residuals": residuals if identifiable else [],
    }
