"""The window's integer sums as the worker replays them (analysis.window): adding and taking back
a contribution, and the per-key means a window summary reports."""

from bias_audit.analysis import window
from bias_audit.analysis.window import FIXED, add_into, summarize_window


def test_adding_and_taking_back_keeps_the_keys_order_and_drops_sums_that_reach_zero():
    sums = {"a": 5, "b": 2}
    add_into(sums, {"b": 3, "c": 7, "d": 0}, 1)  # d nets 0: never written
    assert list(sums.items()) == [("a", 5), ("b", 5), ("c", 7)]
    add_into(sums, {"a": 5, "c": 2, "e": 4}, -1)  # a reaches 0; e was missing: restarts from 0
    assert list(sums.items()) == [("b", 5), ("c", 5), ("e", -4)]
    add_into(sums, {"b": 5, "c": 5}, -1)
    assert sums == {"e": -4}


# a window of two sessions of one model and two reviewers, at 1-10: model "x" has 3 peer scores
# summing to 1.5 of the scale (FIXED units), reviewer "r1" 2 differences summing to -0.25, ...
SUMS = {
    "m:x:n": 3,
    "m:x:s": 3 * FIXED // 2,
    "r:r1:n": 2,
    "r:r1:s": -FIXED // 4,
    "r:r1:q": 7,
    "r:r2:n": 2,
    "r:r2:s": FIXED // 4,
    "o:0:n": 4,
    "o:0:s": FIXED // 10,
    "o:1:n": 0,
    "o:1:s": 5,
    "ro:r1:n": 1,
    "ro:r1:s": -3,
    "p:n": 2,
}


def test_a_summarys_means_per_key_worked_out_by_hand():
    window._count_key.cache_clear()
    for _ in range(2):  # the second time from the parsed keys
        summary = summarize_window(SUMS, tenant_id="t", sessions=12, window_start=None, window_end=None)
        # model means on 1-10: 1 + 9 x (0.5 of the scale); offsets and position effects in points of 9
        assert summary.model_mean_scores == {"x": 5.5}
        assert summary.reviewer_offsets == {"r1": -1.125, "r2": 1.125}
        assert summary.position_effects == {"0": 0.225}  # "o:1" has no sessions: no mean
        assert summary.length_correlation.status == "collecting data" and summary.length_correlation.sample_size == 2
