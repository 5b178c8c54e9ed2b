"""The batch audit against independent computations (numpy/scipy, one session at a time), and
independent of which other sessions share its batch."""

import math
import random
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.session_audit import audit_batch, audit_scores
from bias_audit.schemas.events import CouncilSessionEvent
from tests.builders import council_event, observations, two_way_prediction

MODELS = ["M1", "M2", "M3", "M4", "M5", "M6"]


def random_session(rng: random.Random, index: int) -> CouncilSessionEvent:
    k = rng.randint(2, 6)
    models = MODELS[:k]
    reviewers = models[: rng.randint(1, k)] + (["outsider"] if rng.random() < 0.3 else [])
    grid = rng.choice([[5.0, 6.0, 7.0], [float(v) for v in range(1, 11)], [7.0], [1.0, 10.0]])
    scores = {r: {m: rng.choice(grid) for m in models if rng.random() < 0.85} for r in reviewers}
    scores = {r: row for r, row in scores.items() if row} or {"outsider": {m: 5.0 for m in models}}
    words = {m: rng.choice([10, 10, 50, rng.randint(1, 500)]) for m in models}
    if rng.random() < 0.5:
        event = council_event(
            scores, words=words, orders={r: rng.sample(models, k) for r in scores}, session_id=f"s{index}"
        )
    else:
        event = council_event(scores, words=words, shared_order=rng.sample(models, k), session_id=f"s{index}")
    return CouncilSessionEvent.model_validate(event)


_RNG = random.Random(11)
SESSIONS = [session_scores(random_session(_RNG, i)) for i in range(400)]


def close(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def test_a_session_gets_the_same_audit_whatever_shares_its_batch():
    together = audit_batch(SESSIONS)
    alone = [audit_scores(s) for s in SESSIONS[:150]]
    reversed_batch = audit_batch(SESSIONS[:150][::-1])[::-1]
    for a, b, c in zip(together, alone, reversed_batch):
        assert close(a.audit.model_dump(), b.audit.model_dump())
        assert close(a.audit.model_dump(), c.audit.model_dump())


def peer_table(scores):
    """reviewer -> {model: score} without self-reviews, from the named observations."""
    table = {}
    for o in observations(scores):
        if not o.is_self:
            table.setdefault(o.reviewer, {})[o.model] = o.score
    return table


def audited():
    """(scores, peer table, audit) for every session of the corpus, audited as one batch."""
    return [(s, peer_table(s), a.audit) for s, a in zip(SESSIONS, audit_batch(SESSIONS))]


def own_and_rest(table, reviewer):
    """(reviewer's score, mean of the other reviewers' scores) per model others scored too."""
    pairs = []
    for model, score in table[reviewer].items():
        others = [r[model] for name, r in table.items() if name != reviewer and model in r]
        if others:
            pairs.append((score, np.mean(others)))
    return pairs


def test_length_correlation_and_spearman_match_scipy():
    checked = 0
    for scores, table, audit in audited():
        received = {m: [row[m] for row in table.values() if m in row] for m in scores.models}
        points = [(scores.candidates[m].words, np.mean(v)) for m, v in received.items() if v]
        x, y = np.array([p[0] for p in points], float), np.array([p[1] for p in points])
        assert audit.length_score_sample_size == len(points)
        if len(points) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
            r, p = sps.pearsonr(x, y)
            assert audit.length_score_correlation == pytest.approx(r, abs=1e-9)
            assert audit.length_score_p_value == pytest.approx(p, abs=1e-7)  # r near +-1: p near 0
            rho = sps.spearmanr(x, y).statistic
            if not math.isnan(rho):
                assert audit.length_score_spearman == pytest.approx(rho, abs=1e-9)
            checked += 1
        else:
            assert audit.length_score_correlation is None and audit.length_score_p_value is None
    assert checked > 50


def effects(table):
    """reviewer -> its coefficient in the least-squares fit score ~ reviewer + model (dummies for
    both, numpy's lstsq on the full design), over the models another reviewer scored too."""
    cells = [
        (r, m, score)
        for r, row in table.items()
        for m, score in row.items()
        if sum(m in other for other in table.values()) > 1
    ]
    reviewers = sorted({r for r, _, _ in cells})
    models = sorted({m for _, m, _ in cells})
    design = np.zeros((len(cells), len(reviewers) + len(models)))
    for row, (r, m, _) in enumerate(cells):
        design[row, reviewers.index(r)] = 1.0
        design[row, len(reviewers) + models.index(m)] = 1.0
    coefficients = np.linalg.lstsq(design, np.array([score for _, _, score in cells]), rcond=None)[0]
    return dict(zip(reviewers, coefficients[: len(reviewers)].tolist()))


SIGMA0 = 1.2  # points of a 1-10 scale: the fixed noise SD of a session audited without a window


def test_median_referenced_offsets_and_the_leave_one_out_z_tests_match_a_direct_computation():
    """Offsets against the others' median (display); the flag's test: the mean leave-one-out
    difference over its SE at the fixed sigma0, s0 sqrt(sum_c (1 + 1/(n_c - 1))) / k, normal,
    one-sided in the offset's direction."""
    checked = 0
    for scores, table, audit in audited():
        effect = effects(table)
        unit = scores.scale_span / 9
        for reviewer, row in table.items():
            pairs = own_and_rest(table, reviewer)
            diffs = [own - rest for own, rest in pairs]
            if not diffs:
                assert reviewer not in audit.reviewer_offsets and reviewer not in audit.reviewer_offset_p_values
                continue
            others = [value for name, value in effect.items() if name != reviewer]
            offset = effect[reviewer] - statistics.median(others)
            assert audit.reviewer_offsets[reviewer] == pytest.approx(offset, abs=1e-9)
            assert audit.reviewer_mean_scores[reviewer] == pytest.approx(np.mean(list(row.values())), abs=1e-9)
            assert audit.reviewer_loo_offsets[reviewer] == pytest.approx(np.mean(diffs), abs=1e-9)
            n_others = [
                sum(1 for name, r in table.items() if name != reviewer and model in r)
                for model in row
                if any(name != reviewer and model in r for name, r in table.items())
            ]
            se = SIGMA0 * unit * math.sqrt(sum(1 + 1 / n for n in n_others)) / len(diffs)
            assert audit.reviewer_offset_p_values[reviewer] == pytest.approx(
                sps.norm.sf(abs(np.mean(diffs)) / se), abs=1e-9
            )  # one-sided, in the offset's direction
            checked += 1
        assert audit.noise_source == "fixed" and audit.noise_sd == pytest.approx(SIGMA0 * unit)
    assert checked > 100


def test_self_preference_is_the_own_score_less_the_two_way_prediction():
    checked = 0
    for scores, table, audit in audited():
        unit = scores.scale_span / 9
        for o in observations(scores):
            if not o.is_self:
                continue
            scored_by_peers = any(o.model in row for name, row in table.items())
            prediction = (
                two_way_prediction(table, o.reviewer, o.model) if scored_by_peers and o.reviewer in table else None
            )
            if prediction is None:
                assert o.reviewer not in audit.self_preference
                continue
            predicted, factor = prediction
            assert audit.self_preference[o.reviewer] == pytest.approx(o.score - predicted, abs=1e-9)
            se = SIGMA0 * unit * math.sqrt(1 + factor)
            assert audit.self_preference_p_values[o.reviewer] == pytest.approx(
                sps.norm.sf((o.score - predicted) / se), abs=1e-9
            )
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("members, factor", [(3, 2.5), (4, 1 + 5 / 6), (5, 1 + 7 / 12)])
def test_the_self_preference_se_factor_of_a_complete_council_is_the_issues(members, factor):
    """Issue 18: SE = s0 sqrt(1 + a'a), sqrt(2.5), sqrt(1.833), sqrt(1.583) at M = 3, 4, 5."""
    names = [f"M{i}" for i in range(members)]
    rng = random.Random(members)
    scores = {r: {m: float(rng.randint(3, 9)) for m in names} for r in names}
    session = session_scores(CouncilSessionEvent.model_validate(council_event(scores)))
    audit = audit_scores(session).audit
    nonzero = [name for name in names if abs(audit.self_preference[name]) > 1e-6]  # 0 / 0 reads nothing
    assert len(nonzero) >= 2
    for name in nonzero:
        z = sps.norm.isf(audit.self_preference_p_values[name])
        assert audit.self_preference[name] / z == pytest.approx(SIGMA0 * math.sqrt(factor), rel=1e-7)


def test_agreement_is_the_mean_item_rest_correlation():
    checked = 0
    for _, table, audit in audited():
        correlations = []
        for reviewer in table:
            pairs = own_and_rest(table, reviewer)
            if len(pairs) >= 3:
                a, b = np.array(pairs).T
                if np.ptp(a) > 0 and np.ptp(b) > 1e-12:
                    correlations.append(np.corrcoef(a, b)[0, 1])
        if correlations:
            assert audit.reviewer_agreement == pytest.approx(np.mean(correlations), abs=1e-9)
            checked += 1
        else:
            assert audit.reviewer_agreement is None
    assert checked > 50


def test_the_corpus_is_varied():
    assert {len(s.models) for s in SESSIONS} == {2, 3, 4, 5, 6}
    assert len({len(s.reviewers) for s in SESSIONS}) >= 5


def test_an_empty_batch_audits_nothing():
    assert audit_batch([]) == []


def test_position_effects_and_f_test_match_a_direct_computation():
    """Within-model residuals grouped by display position; F test with the model means' degrees
    of freedom removed from the within-group df (science.md)."""
    checked = 0
    for scores, analysis in zip(SESSIONS, audit_batch(SESSIONS)):
        audit = analysis.audit
        placed = [o for o in observations(scores) if not o.is_self and o.position is not None]
        positions_by_model = {}
        for o in placed:
            positions_by_model.setdefault(o.model, set()).add(o.position)
        identifiable = any(len(p) > 1 for p in positions_by_model.values())
        assert audit.position_identifiable is identifiable
        if not identifiable:
            assert audit.position_effects == {} and audit.position_p_value is None
            assert analysis.position_residuals == []
            continue
        model_mean = {m: np.mean([o.score for o in placed if o.model == m]) for m in positions_by_model}
        groups = {}
        for o in placed:
            groups.setdefault(o.position, []).append(o.score - model_mean[o.model])
        expected_residuals = sorted((o.position, o.score - model_mean[o.model]) for o in placed)
        got_residuals = sorted(analysis.position_residuals)
        assert [p for p, _ in got_residuals] == [p for p, _ in expected_residuals]
        assert [r for _, r in got_residuals] == pytest.approx([r for _, r in expected_residuals], abs=1e-9)
        effects = {str(p): np.mean(v) for p, v in sorted(groups.items())}
        assert audit.position_effects == pytest.approx(effects, abs=1e-9)
        if len(groups) >= 2:
            assert audit.position_score_variance == pytest.approx(np.var(list(effects.values()), ddof=1), abs=1e-9)
        values = np.concatenate([np.array(v) for v in groups.values()])
        between = sum(len(v) * (np.mean(v) - values.mean()) ** 2 for v in groups.values())
        within = sum(((np.array(v) - np.mean(v)) ** 2).sum() for v in groups.values())
        df_between = len(groups) - 1
        df_within = len(values) - len(groups) - (len(positions_by_model) - 1)
        if df_between >= 1 and df_within >= 1 and within > 1e-9:
            expected = sps.f.sf((between / df_between) / (within / df_within), df_between, df_within)
            assert audit.position_p_value == pytest.approx(expected, abs=1e-9)
            checked += 1
    assert checked > 50


def test_a_council_in_two_parts_gets_offsets_within_each_part_alone_and_in_a_batch():
    # R1 and R2 score only M1, M2; R3 and R4 only M3, M4: no response links the two pairs.
    # Within the first pair R1 is 2 points above R2 (effects +1, -1, centred per part); the
    # second pair agrees (0, 0). Offsets against the others' median: R1 1 - median(-1, 0, 0) = 1,
    # R2 -1 - median(1, 0, 0) = -1, R3 and R4 0 - median(1, -1, 0) = 0.
    scores = {"R1": {"M1": 8, "M2": 6}, "R2": {"M1": 6, "M2": 4}, "R3": {"M3": 5, "M4": 7}, "R4": {"M3": 5, "M4": 7}}
    session = session_scores(CouncilSessionEvent.model_validate(council_event(scores)))
    expected = {"R1": 1.0, "R2": -1.0, "R3": 0.0, "R4": 0.0}
    assert audit_batch([session])[0].audit.reviewer_offsets == pytest.approx(expected, abs=1e-12)
    batched = audit_batch([session] * 8)[0]
    assert batched.audit.reviewer_offsets == pytest.approx(expected, abs=1e-9)
