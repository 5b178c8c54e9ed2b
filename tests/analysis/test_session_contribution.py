"""What one session adds to its tenant's window (analysis.window.session_contribution), worked
out by hand for a small council whose scores are exactly additive."""

from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.session_audit import audit_scores
from bias_audit.analysis.window import session_contribution
from bias_audit.schemas.events import CouncilSessionEvent
from tests.builders import council_event

# Reviewer effects A 0, B -1, C +1 over model levels x 8, y 6, z 4 (no self-reviews); each
# reviewer sees the answers in another order, so position is identifiable. Answers of 10, 20
# and 30 words.
SCORES = {"A": {"x": 8, "y": 6, "z": 4}, "B": {"x": 7, "y": 5, "z": 3}, "C": {"x": 9, "y": 7, "z": 5}}
ORDERS = {"A": ["x", "y", "z"], "B": ["y", "z", "x"], "C": ["z", "x", "y"]}
WORDS = {"x": 10, "y": 20, "z": 30}

# One point of the 1-10 scale is 10^6 / 9 fixed-point units.
EXPECTED = {
    # peer scores per model: how many, and their sum above the scale's low end (24 - 3 = 21 points for x)
    "m:x:n": 3,
    "m:x:s": 2_333_333,
    "m:y:n": 3,
    "m:y:s": 1_666_667,
    "m:z:n": 3,
    "m:z:s": 1_000_000,
    # leave-one-out differences (B -1.5, C +1.5 on every model, A 0), shifted to the median-peer
    # offsets (-1.5, +1.5, 0: no shift); A's sums are 0 and left out
    "r:A:n": 3,
    "r:B:n": 3,
    "r:B:s": -500_001,
    "r:B:q": 3 * 166_667**2,
    "r:C:n": 3,
    "r:C:s": 500_001,
    "r:C:q": 3 * 166_667**2,
    # words against the offset-adjusted mean score (8, 6, 4 -> 7, 5, 3 points above the low end)
    "p:n": 3,
    "p:x": 60,
    "p:y": 777_778 + 555_556 + 333_333,
    "p:xx": 100 + 400 + 900,
    "p:yy": 777_778**2 + 555_556**2 + 333_333**2,
    "p:xy": 10 * 777_778 + 20 * 555_556 + 30 * 333_333,
    # one offset per reviewer, to the recent window only
    "ro:A:n": 1,
    "ro:B:n": 1,
    "ro:B:s": -166_667,
    "ro:B:q": 166_667**2,
    "ro:C:n": 1,
    "ro:C:s": 166_667,
    "ro:C:q": 166_667**2,
    # within-model residuals (0, -1, +1 point) at each display position: each position holds one of each
    "o:0:n": 3,
    "o:0:q": 2 * 111_111**2,
    "o:1:n": 3,
    "o:1:q": 2 * 111_111**2,
    "o:2:n": 3,
    "o:2:q": 2 * 111_111**2,
}


def test_an_additive_councils_contribution_worked_out_by_hand():
    event = CouncilSessionEvent.model_validate(council_event(SCORES, orders=ORDERS, words=WORDS))
    scores = session_scores(event)
    contribution = session_contribution(scores, audit_scores(scores))
    assert contribution.window == {k: v for k, v in EXPECTED.items() if not k.startswith("ro:")}
    assert contribution.recent == {k: v for k, v in EXPECTED.items() if k.startswith("ro:")}
