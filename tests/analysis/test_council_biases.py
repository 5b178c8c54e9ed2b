"""Council biases (issue 18): exact values against independent oracles (scipy, scikit-learn, hand
arithmetic), then simulated corpora: each bias injected at a realistic size is found in >= 80% of
60-session corpora and, without it, each flag fires in <= 5% (figures in bench/RESULTS.md)."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import random
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from bias_audit.analysis._text import cosine_matrix, normalized_ascii
from bias_audit.analysis.council_biases import (
    _slope,
    affinity,
    anchoring,
    calibrated_view,
    length_given_correctness,
    pair_fit,
    reviewer_posteriors,
    self_consistency,
    style_similarity,
)
from bias_audit.analysis.council_biases import (
    fitted_cells as fitted_cells_of,
)
from bias_audit.analysis.digest import SessionDigest
from bias_audit.analysis.multiple_tests import benjamini_hochberg
from bias_audit.analysis.response_traits import DEFAULT_FINGERPRINT_KEY, response_fingerprint, similarity_rows
from bias_audit.analysis.window_cells import window_cells
from bias_audit.schemas.report import Estimate, ReviewerProfile
from tests import text_oracle

from .council_simulation import MODELS, Injected, corpus


@pytest.mark.parametrize(
    "p_values",
    [
        [0.01, 0.04, 0.03, 0.2],
        [0.001, 0.5, 0.049, 0.051, 0.9, 0.0001],
        [0.3],
        [0.02, 0.02, 0.02],
    ],
)
def test_benjamini_hochberg_matches_scipy(p_values):
    assert benjamini_hochberg(p_values) == pytest.approx(list(stats.false_discovery_control(p_values)), abs=1e-12)


@pytest.mark.parametrize(
    "x, y",
    [
        ([0.0, 1.0, 2.0, 3.0, 4.0], [1.0, 2.9, 5.2, 7.1, 8.8]),
        ([0.2, 0.5, 0.1, 0.9, 0.7, 0.3], [-1.0, 0.4, -0.2, 1.5, 0.1, 0.0]),
    ],
)
def test_slope_matches_linregress(x, y):
    slope, se, lo, hi, p = _slope(np.array(x), np.array(y))
    oracle = stats.linregress(x, y)
    t = stats.t.ppf(0.975, len(x) - 2)
    assert (slope, se, p) == pytest.approx((oracle.slope, oracle.stderr, oracle.pvalue), rel=1e-9)
    assert (lo, hi) == pytest.approx((oracle.slope - t * oracle.stderr, oracle.slope + t * oracle.stderr), rel=1e-9)


def test_slope_with_a_covariate_matches_least_squares_by_hand():
    rng = np.random.default_rng(3)
    x, z = rng.normal(size=30), rng.normal(size=30)
    y = 0.7 * x - 1.2 * z + rng.normal(size=30)
    slope, se, _, _, p = _slope(x, y, z)
    design = np.column_stack([np.ones(30), x, z])
    beta, rss, *_ = np.linalg.lstsq(design, y, rcond=None)
    sigma2 = rss[0] / 27
    oracle_se = np.sqrt(sigma2 * np.linalg.inv(design.T @ design)[1, 1])
    assert (slope, se) == pytest.approx((beta[1], oracle_se), rel=1e-9)
    assert p == pytest.approx(2 * stats.t.sf(abs(beta[1]) / oracle_se, 27), rel=1e-9)


@pytest.mark.parametrize("n", [5, 37, 250])
@pytest.mark.parametrize("value", [0.1, 1 / 3, 0.7, 2.2, 123.456])
def test_no_slope_without_spread_in_x_or_with_x_made_of_the_intercept_and_the_covariate(n, value):
    rng = np.random.default_rng(n)
    y = rng.normal(size=n)
    assert _slope(np.full(n, value), y) is None
    x = rng.normal(size=n)
    assert _slope(x, y, value * x + 0.1) is None


def test_a_slope_in_large_units_is_still_a_slope():
    rng = np.random.default_rng(9)
    x = 1e6 + rng.normal(size=40) * 10.0  # far from zero, small spread: the intercept nearly collinear
    y = 0.02 * x + rng.normal(size=40)
    slope, se, *_ = _slope(x, y)
    oracle = stats.linregress(x, y)
    assert (slope, se) == pytest.approx((oracle.slope, oracle.stderr), rel=1e-6)


def test_fingerprint_is_the_keyed_hash_of_the_normalized_text():
    expected = hmac.new(b"k", b"the same answer", hashlib.sha256).hexdigest()[:16]
    assert response_fingerprint("The  same\nANSWER ", b"k") == expected
    assert (
        response_fingerprint("the same answer")
        == hmac.new(DEFAULT_FINGERPRINT_KEY, b"the same answer", hashlib.sha256).hexdigest()[:16]
    )
    assert response_fingerprint("the same answer", b"k") != response_fingerprint("the same answer", b"j")


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("", b""),
        (" \t\n", b""),
        ("A", b"a"),
        ("  Mixed CASE\twords\r\n", b"mixed case words"),
        ("unit\x1fsep\x1c\x0bvt\x0cff", b"unit sep vt ff"),  # str.split()'s ASCII separators
        ("keep\x7fdel, PUNCT!", b"keep\x7fdel, punct!"),  # DEL and punctuation are word characters
        ("Non\u00a0ASCII \u00c9T\u00c9", "non ascii \u00e9t\u00e9".encode()),  # U+00A0 splits; \u00c9 lowers
        ("\u0130stanbul", "i\u0307stanbul".encode()),  # a lower() longer than the text
    ],
)
def test_the_fingerprint_normalizes_case_and_whitespace_as_str_lower_and_split(text, normalized):
    """The compiled normalization of ASCII text (analysis/_text.c) and Python's for the rest give
    the bytes written here by hand."""
    assert response_fingerprint(text, b"k") == hmac.new(b"k", normalized, hashlib.sha256).hexdigest()[:16]


def test_the_compiled_normalization_equals_pythons_on_random_ascii_text():
    assert normalized_ascii("Built?") == b"built?"
    rng = random.Random(5)
    alphabet = "aZq .\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x7f09!-_"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert normalized_ascii(text) == text_oracle.normalized_ascii(text), repr(text)
    assert normalized_ascii("caf\u00e9") is None  # Unicode's rules: Python's path
    with pytest.raises(TypeError, match="str"):
        normalized_ascii(b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "texts",
    [
        ["the cache holds the index", "the index holds the cache entries"],
        ["Shard by tenant id; replicate reads.", "replicate reads and shard by user", "Shard, shard, SHARD by_user"],
        ["one", "two"],
        ["Café société: naïve résumé", "CAFÉ societe naïve", "the café's résumé"],  # non-ASCII words and case
    ],
)
def test_similarity_matches_scikit_learns_word_ngram_cosine(texts):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    vectors = CountVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b").fit_transform(texts)
    assert text_oracle.pair_similarities(texts) == pytest.approx(cosine_similarity(vectors), abs=1e-12)
    assert np.array(similarity_rows(texts)) == pytest.approx(cosine_similarity(vectors), abs=1e-12)  # C


def test_similarity_of_a_text_without_words_is_undefined():
    cosines = text_oracle.pair_similarities(["...", "some words here"])
    assert np.isnan(cosines[0, 1]) and cosines[1, 1] == pytest.approx(1.0)
    rows = similarity_rows(["...", "some words here", ""])
    assert np.isnan(rows[0][1]) and np.isnan(rows[2][2]) and rows[1][1] == 1.0


def test_the_compiled_cosines_give_the_mirrors_floats_exactly():
    """analysis/_text.c against its numpy mirror (tests/text_oracle.py), bit for bit, on random texts (ASCII and not,
    punctuation, repeats, one-word and empty texts, councils of 1 to 12)."""
    rng = random.Random(7)
    vocabulary = [
        "the",
        "The",
        "cache",
        "index",
        "a",
        "A",
        "shard_by",
        "42",
        "x1",
        "café",
        "naïve",
        "über",
        "日本",
        "ё",
        "",
        "...",
        ",",
        "—",
        "\t",
        "\n",
        " ",
        "don't",
        "e-mail",
        "\ud800",
    ]
    for _ in range(300):
        texts = [
            " ".join(rng.choice(vocabulary) for _ in range(rng.choice([0, 1, 2, 5, 40, 300])))
            for _ in range(rng.randint(1, 12))
        ]
        expected = text_oracle.pair_similarities(texts).tolist()
        got = similarity_rows(texts)
        assert len(got) == len(expected)
        for got_row, expected_row in zip(got, expected):
            assert [repr(v) for v in got_row] == [repr(v) for v in expected_row], texts


def test_the_compiled_cosines_refuse_what_is_not_bytes():
    with pytest.raises(TypeError, match="bytes"):
        cosine_matrix(["not bytes"])  # type: ignore[list-item]


def _digest(index: int, rows: list[tuple[int, int, int, float]], models=("a", "b", "c", "d"), **extra) -> SessionDigest:
    """rows: (reviewer, model, position, score in points 1-10)."""
    return SessionDigest.from_cells(
        [(r, m, p, (y - 1) / 9, False) for r, m, p, y in rows],
        session_id=f"s{index}",
        tenant_id="t",
        ts_ms=1_790_000_000_000 + index,
        trace_id=None,
        config_version=None,
        reviewers=models,
        models=models,
        lengths=(100.0,) * len(models),
        length_unit="words",
        **extra,
    )


def test_an_exact_interaction_is_measured_exactly():
    """Scores = session x model quality + reviewer offset + 1.5 for (a -> b) + a little noise that
    averages out: the pair's effect is 1.5 (its additive prediction comes from the other pairs)."""
    rng = np.random.default_rng(1)
    offsets = [0.0, -1.0, 0.5, 0.2]
    digests = []
    for s in range(40):
        quality = rng.uniform(3, 8, 4)
        rows = []
        for r in range(4):
            for m in range(4):
                if r != m:
                    rows.append((r, m, -1, quality[m] + offsets[r] + (1.5 if (r, m) == (0, 1) else 0.0)))
        digests.append(_digest(s, rows))
    cells = window_cells(digests)
    found = {(a.reviewer, a.model): a for a in affinity(cells, pair_fit(cells))}
    assert found[("a", "b")].effect == pytest.approx(1.5, abs=1e-6)
    assert found[("a", "b")].flagged
    assert found[("a", "b")].n == 40 and found[("a", "b")].sessions == 40


def test_within_content_sd_and_icc_match_one_way_anova():
    """Reviewer a scores three contents three times each; b and c once each time."""
    a_scores = {"x": [5, 7, 6], "y": [3, 2, 4], "z": [8, 9, 9]}
    digests = []
    for s in range(12):
        content = "xyz"[s % 3]
        repeat = s // 3 % 3 if s < 9 else 0
        y_a = a_scores[content][repeat] if s < 9 else 5.0
        rows = [(0, 3, -1, y_a), (1, 3, -1, 6.0 + (s % 2)), (2, 3, -1, 5.0)]
        digests.append(_digest(s, rows, fingerprints=(None, None, None, f"c-{content}" if s < 9 else f"u{s}")))
    cells = window_cells(digests)
    found = {e.reviewer: e for e in self_consistency(cells)}
    groups = [np.array(v, float) for v in a_scores.values()]
    within = sum(((g - g.mean()) ** 2).sum() for g in groups) / 6
    assert found["a"].effect == pytest.approx(np.sqrt(within), abs=1e-4)
    f = stats.f_oneway(*groups).statistic
    assert found["a"].icc == pytest.approx((f - 1) / (f + 3 - 1), abs=1e-4)  # ICC(1) with k = 3
    assert found["a"].ci_lower == pytest.approx(np.sqrt(6 * within / stats.chi2.ppf(0.975, 6)), abs=1e-4)
    assert found["a"].ci_upper == pytest.approx(np.sqrt(6 * within / stats.chi2.ppf(0.025, 6)), abs=1e-4)
    # b and c: each content scored alike, or alternating by one
    assert found["a"].council_sd is not None and found["a"].contents == 3


def test_posteriors_shrink_by_the_method_of_moments():
    z = stats.norm.ppf(0.975)

    def profile(name: str, offset: float, se: float) -> ReviewerProfile:
        e = Estimate(
            point_estimate=offset,
            ci_lower=offset - z * se,
            ci_upper=offset + z * se,
            sample_size=50,
            sessions=50,
            confidence="high",
        )
        return ReviewerProfile(
            reviewer=name,
            sessions=50,
            scores=50,
            confidence="high",
            mean_score=6.0,
            score_std=1.0,
            offset=e,
            self_preference=e,
            agreement_with_peers=None,
        )

    values, ses = [-2.0, 0.1, 0.3], [0.2, 0.2, 0.4]
    posts = reviewer_posteriors([profile(n, v, s) for n, v, s in zip("abc", values, ses)])
    w = 1 / np.square(ses)
    mean = (w * values).sum() / w.sum()
    q = (w * (np.array(values) - mean) ** 2).sum()
    tau2 = (q - 2) / (w.sum() - (w**2).sum() / w.sum())
    for post, v, s in zip(posts, values, ses):
        shrink = s * s / (s * s + tau2)
        assert post.shrinkage == pytest.approx(shrink, abs=1e-4)
        assert post.posterior_mean == pytest.approx((1 - shrink) * v, abs=1e-4)
        sd = np.sqrt((1 - shrink) * s * s)
        assert post.credible_upper - post.credible_lower == pytest.approx(2 * z * sd, abs=2e-4)


@pytest.mark.parametrize("block", [4, 10**9])  # cells a block: a session is 4 here
def test_calibrated_view_averages_each_reviewers_z_scores(block):
    digests = [
        _digest(s, [(0, 2, -1, 8.0 + s % 2), (1, 2, -1, 4.0 + s % 3), (0, 3, -1, 6.0), (1, 3, -1, 5.0)])
        for s in range(12)
    ]
    view = {m.model: m for m in calibrated_view(window_cells(digests), block)}
    a = np.array([8.0 + s % 2 for s in range(12)] + [6.0] * 12)
    b = np.array([4.0 + s % 3 for s in range(12)] + [5.0] * 12)
    za, zb = (a - a.mean()) / a.std(ddof=1), (b - b.mean()) / b.std(ddof=1)
    assert view["c"].calibrated_z == pytest.approx(np.concatenate([za[:12], zb[:12]]).mean(), abs=1e-4)
    assert view["c"].raw_mean == pytest.approx(np.concatenate([a[:12], b[:12]]).mean(), abs=1e-4)
    assert view["d"].calibrated_z == pytest.approx(np.concatenate([za[12:], zb[12:]]).mean(), abs=1e-4)
    assert view["c"].scores == view["d"].scores == 24


def test_a_reviewer_who_gives_one_score_has_no_z_and_leaves_the_calibrated_view_alone():
    """Reviewer d scores c and d 7.0 every time: no spread, so no z score of its own (it is left
    out of the calibrated mean, not counted as 0), while its scores still count in the raw mean."""
    digests = [
        _digest(
            s, [(0, 2, -1, 8.0 + s % 2), (1, 2, -1, 4.0 + s % 3), (3, 2, -1, 7.0), (0, 3, -1, 6.0), (1, 3, -1, 5.0)]
        )
        for s in range(12)
    ]
    view = {m.model: m for m in calibrated_view(window_cells(digests))}
    a = np.array([8.0 + s % 2 for s in range(12)] + [6.0] * 12)
    b = np.array([4.0 + s % 3 for s in range(12)] + [5.0] * 12)
    za, zb = (a - a.mean()) / a.std(ddof=1), (b - b.mean()) / b.std(ddof=1)
    assert view["c"].calibrated_z == pytest.approx(np.concatenate([za[:12], zb[:12]]).mean(), abs=1e-4)
    assert view["c"].raw_mean == pytest.approx(np.concatenate([a[:12], b[:12], [7.0] * 12]).mean(), abs=1e-4)
    assert view["c"].scores == 36


def test_the_length_effect_among_equally_correct_answers():
    """Correct answers score 2 points more and each 100 words 0.5 more: the coefficient is 0.5,
    not the 2 points correctness would lend long answers if correct ones were longer."""
    rng = np.random.default_rng(5)
    digests = []
    for s in range(20):
        correct = (True, False, True, False)
        lengths = tuple(
            float(x)
            for x in (rng.integers(300, 500), rng.integers(50, 200), rng.integers(300, 500), rng.integers(50, 200))
        )
        rows = [
            (r, m, -1, 4.0 + 2.0 * correct[m] + 0.5 * lengths[m] / 100 + 0.3 * r)
            for r in range(4)
            for m in range(4)
            if r != m
        ]
        digest = _digest(s, rows, correct=correct)
        digests.append(SessionDigest(**{**{f: getattr(digest, f) for f in digest.__slots__}, "lengths": lengths}))
    estimate = length_given_correctness(window_cells(digests))
    assert estimate.point_estimate == pytest.approx(0.5, abs=1e-6)
    assert length_given_correctness(window_cells([_digest(0, [(0, 1, -1, 5.0)])])) is None  # no correctness known


# --- simulated corpora -------------------------------------------------------------------------

CORPORA = 200
NULL_CORPORA = 1000  # the null rates are checked on more corpora: they sit near the limit


def _rates(injected: Injected, noise: float = 1.0, seed: int = 7, corpora: int = CORPORA) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = {"affinity": 0, "anchoring": 0, "style": 0, "consistency": 0, "target": 0}
    for _ in range(corpora):
        cells = window_cells(corpus(rng, injected, noise=noise))
        fitted = pair_fit(cells)
        found = {
            "affinity": [a for a in affinity(cells, fitted) if a.flagged],
            "anchoring": [a for a in anchoring(cells, fitted) if a.flagged],
            "style": [a for a in style_similarity(cells, fitted) if a.flagged],
            "consistency": [a for a in self_consistency(cells) if a.flagged],
        }
        for name, flagged in found.items():
            hits[name] += bool(flagged)
        hits["target"] += _found_target(injected, found)
    return {name: count / corpora for name, count in hits.items()}


def _found_target(injected: Injected, found: dict) -> bool:
    if injected.affinity:
        r, m, _ = injected.affinity
        return any(a.reviewer == r and a.model == m and a.effect > 0 for a in found["affinity"])
    if injected.anchoring:
        return any(a.reviewer == injected.anchoring[0] and a.effect > 0 for a in found["anchoring"])
    if injected.style:
        return any(a.reviewer == injected.style[0] and a.effect > 0 for a in found["style"])
    if injected.inconsistent:
        return any(a.reviewer == injected.inconsistent[0] for a in found["consistency"])
    return False


@pytest.mark.slow
def test_unbiased_corpora_raise_each_flag_in_at_most_5_percent():
    # at the simulation's noise; bench/council_biases.py sweeps noise SD 0.8-1.2
    rates = _rates(Injected(), noise=1.0, seed=10, corpora=NULL_CORPORA)
    assert max(rates[name] for name in ("affinity", "anchoring", "style", "consistency")) <= 0.05, rates


@pytest.mark.parametrize(
    "injected, bias",
    [
        (Injected(affinity=(MODELS[0], MODELS[1], 1.0)), "affinity"),
        (Injected(anchoring=(MODELS[2], 0.4)), "anchoring"),
        (Injected(style=(MODELS[3], 3.0)), "style"),
        (Injected(inconsistent=(MODELS[1], 2.0)), "consistency"),
    ],
)
@pytest.mark.slow
def test_each_injected_bias_is_found_in_80_percent_of_60_session_corpora(injected, bias):
    rates = _rates(injected)
    assert rates["target"] >= 0.80, rates
    # the other flags stay near their null rate: one bias is not read as another
    assert max(rate for name, rate in rates.items() if name not in (bias, "target")) <= 0.08, rates


def test_mutual_favour_is_named_as_possible_collusion():
    """Five members: with four who each review the other three, "a and b favour each other" and
    "c and d do" differ by an additive pattern (generosity and quality) and cannot be told apart."""
    rng = np.random.default_rng(2)
    five = (*MODELS, "echo")
    cells = window_cells(corpus(rng, Injected(affinity=(MODELS[0], MODELS[1], 1.5), mutual=True), models=five))
    flagged = {(a.reviewer, a.model): a for a in affinity(cells, pair_fit(cells)) if a.flagged}
    assert flagged[(MODELS[0], MODELS[1])].mutual and flagged[(MODELS[1], MODELS[0])].mutual
    assert not any(
        a.mutual for key, a in flagged.items() if key not in {(MODELS[0], MODELS[1]), (MODELS[1], MODELS[0])}
    )


@pytest.mark.parametrize(("models", "kind"), [(5, np.int8), (12, np.int16)])
def test_the_pair_fit_numbers_its_pairs_in_a_byte_while_they_fit_one(models, kind):
    from tests.simulate import Corpus

    cells = window_cells(Corpus(sessions=12, models=models, seed=4).digests())
    fitted = pair_fit(cells)
    assert len(fitted.pairs) == models * (models - 1)  # every reviewer scored every other's answer
    assert fitted.pair_of.dtype == kind


@pytest.mark.parametrize("block", [5, 64])
def test_style_mimicry_finds_the_cells_with_a_similarity_a_block_at_a_time(block):
    """Similarities known on some cells only: found a few cells at a time, the same slopes as
    found at once, and the injected mimic flagged."""
    cells = window_cells(corpus(np.random.default_rng(6), Injected(style=(MODELS[3], 3.0))))
    similarity = cells.similarity.copy()
    similarity[::4] = np.nan  # a record without one
    cells = dataclasses.replace(cells, similarity=similarity)
    fitted = pair_fit(cells)
    found = style_similarity(cells, fitted, block=block)
    assert found == style_similarity(cells, fitted, block=1 << 20)
    assert [a.reviewer for a in found if a.flagged] == [MODELS[3]]
    fitted_cells = np.concatenate([here for _, here in fitted_cells_of(cells)])
    assert sum(a.n for a in found) == int(np.count_nonzero(~np.isnan(similarity[fitted_cells])))


@pytest.mark.parametrize("block", [9, 200])
def test_the_pair_fit_by_blocks_of_sessions_is_the_fit_in_one(block):
    """The pair fit's counts, X'X and sandwich summed a block of sessions at a time: the same fit
    and the same sections as from one block; each pair's cells and sessions as counted one by one."""
    cells = window_cells(corpus(np.random.default_rng(9), Injected(affinity=(MODELS[0], MODELS[1], 1.5))))
    # a quarter of the scores counted out of the peer scores: some responses keep one, not fitted
    cells = dataclasses.replace(cells, own=cells.own | (np.arange(len(cells.own)) % 4 == 0))
    one, by_blocks = pair_fit(cells, 1 << 20), pair_fit(cells, block)
    assert by_blocks.pairs == one.pairs
    assert by_blocks.fit.beta == pytest.approx(one.fit.beta, abs=1e-10)
    assert by_blocks.fit.meat == pytest.approx(one.fit.meat, abs=1e-9)
    assert affinity(cells, by_blocks) == affinity(cells, one)
    assert anchoring(cells, by_blocks) == anchoring(cells, one)
    peers: Counter = Counter()
    for s, m, own in zip(cells.session.tolist(), cells.model.tolist(), cells.own.tolist()):
        peers[s, m] += not own
    fitted = [
        (s, r, m)
        for s, r, m, own in zip(
            cells.session.tolist(), cells.reviewer.tolist(), cells.model.tolist(), cells.own.tolist()
        )
        if not own and peers[s, m] >= 2
    ]
    pairs = sorted({(r, m) for _, r, m in fitted})
    assert one.pairs == pairs and len(fitted) < np.count_nonzero(~cells.own)
    assert by_blocks.cells_per_pair.tolist() == [sum(1 for _, r, m in fitted if (r, m) == p) for p in pairs]
    assert by_blocks.sessions_per_pair.tolist() == [len({s for s, r, m in fitted if (r, m) == p}) for p in pairs]
    # the residuals a section reads: the dense design's, a dummy per pair and per (session, model)
    [(_, here)] = fitted_cells_of(cells, 1 << 20)
    pair = one.pair_of[cells.reviewer[here].astype(int) * len(cells.models) + cells.model[here]]
    _, group = np.unique(cells.session[here].astype(int) * len(cells.models) + cells.model[here], return_inverse=True)
    dense = np.hstack([np.eye(len(pairs))[pair], np.eye(group.max() + 1)[group]])
    beta, *_ = np.linalg.lstsq(dense, cells.scores(here), rcond=None)
    expected = cells.scores(here) - dense @ beta
    assert one.residuals_of(cells, here) == pytest.approx(expected, abs=1e-9)
    first = cells.session[here] < 5  # whole responses: the first sessions'
    assert by_blocks.residuals_of(cells, here[first]) == pytest.approx(expected[first], abs=1e-9)
