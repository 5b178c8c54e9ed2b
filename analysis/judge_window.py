"""A judge's rolling window: integer sums per verdict (exact to add and evict, like the council
window's), what they estimate, and when the recent verdicts drift from the judge's own baseline.

The window of a (tenant, judge model, judge prompt) holds its last N verdicts within D days; the
recent window its last K. The baseline is the window without the recent part. A drift fires when
the recent rate differs from the baseline's by the practical size and a two-proportion z of 4,
for the first-position rate, the length preference or the position consistency (a swapped pair
counts with the second of its games to be counted); it resolves when z falls under 2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .judge_games import JudgedGame
from .judge_metric import Metric, half_rate_metric, rate_metric
from .judges import PRACTICAL_RATE, flagged_metrics, longer_preferred, pair_key

N, FAILED, GRADED, TIES, FIRST_DECIDED, FIRST_WON, LENGTH_DECIDED, LONGER_WON, PAIRS, CONSISTENT = (
    "j:n",
    "j:failed",
    "j:graded",
    "j:ties",
    "j:fd",
    "j:fw",
    "j:ld",
    "j:lw",
    "j:pn",
    "j:pc",
)
MIN_DRIFT = 50  # decided verdicts each side needs before a drift is judged
# Checked at every verdict, so at a strict level: a drift fires when the two-proportion z of the
# recent rate against the baseline's reaches 4 (a 95% CI fires on a steady judge again and
# again) and resolves when it falls under 2; in between it holds
Z_FIRING, Z_BACK = 4.0, 2.0
MIN_FLAG = 30  # decided verdicts before the window flags a rate

# metric -> (decided field, counted field, bias type)
RATES = {
    "first_position_rate": (FIRST_DECIDED, FIRST_WON, "judge_position_bias"),
    "length_preference": (LENGTH_DECIDED, LONGER_WON, "judge_length_bias"),
}
# the rates whose drift alerts: the tested ones, and position consistency (no neutral value)
DRIFTING = {name: (decided, won) for name, (decided, won, _) in RATES.items()} | {
    "position_consistency": (PAIRS, CONSISTENT)
}


def direction_code(game: JudgedGame) -> str:
    """A game's verdict as the partner of a swapped pair reads it: its side, or F (failed)."""
    return "F" if game.direction is None else str(game.direction)


def swap_keys(game: JudgedGame) -> tuple[str, str] | None:
    """The game's key and its swapped partner's (game 1 and 2, 3 and 4, ...) among the judge's
    games; None for a game without a number or of an unknown order."""
    if game.game is None or not game.order_known:
        return None
    item, models, repetition = pair_key(game)
    pair = "\x1f".join(map(str, (item, *models, repetition)))
    partner = game.game + 1 if game.game % 2 else game.game - 1
    return f"{pair}\x1f{game.game}", f"{pair}\x1f{partner}"


def consistent_with(game: JudgedGame, partner: str) -> bool:
    """JudgeBench's rule: the second game's verdict flipped equals the first's (two failed
    games agree); `partner` is the other game's direction_code."""
    mine = direction_code(game)
    flipped = {"1": "-1", "-1": "1"}.get(mine, mine)
    return flipped == partner


def verdict_contribution(game: JudgedGame, partner: str | None = None) -> dict[str, int]:
    """What one verdict adds to its judge's sums (zero fields left out); `partner`: the swapped
    game's direction_code when that game was judged already (the pair counts with this one)."""
    out = {N: 1}
    if partner is not None:
        out[PAIRS] = 1
        if consistent_with(game, partner):
            out[CONSISTENT] = 1
    if game.failed:
        out[FAILED] = 1
        return out
    if game.level is None:  # an answer graded alone: a score, no side to prefer
        out[GRADED] = 1
        return out
    if game.level == 0:
        out[TIES] = 1
    if game.order_known and game.direction:
        out[FIRST_DECIDED] = 1
        if game.direction > 0:
            out[FIRST_WON] = 1
    longer = longer_preferred(game)
    if longer is not None:
        out[LENGTH_DECIDED] = 1
        if longer:
            out[LONGER_WON] = 1
    return out


@dataclass(frozen=True, slots=True)
class JudgeWindow:
    verdicts: int
    metrics: dict[str, Metric]  # first_position_rate, length_preference (tested); tie_rate, failed_rate

    @property
    def flagged(self) -> list[str]:
        return [RATES[name][2] for name in RATES if self.metrics[name].flagged]


def window_estimates(sums: Mapping[str, int]) -> JudgeWindow:
    """The window's rates with Wilson CIs, as the judge report computes them; the two tested ones
    flagged as it flags them (with at least MIN_FLAG decided verdicts)."""
    n = sums.get(N, 0)
    metrics = {
        name: half_rate_metric(sums.get(won, 0), sums.get(decided, 0)) for name, (decided, won, _) in RATES.items()
    }
    metrics = flagged_metrics(metrics, [name for name in RATES if metrics[name].n >= MIN_FLAG])
    metrics["tie_rate"] = rate_metric(sums.get(TIES, 0), n - sums.get(FAILED, 0) - sums.get(GRADED, 0))
    metrics["failed_rate"] = rate_metric(sums.get(FAILED, 0), n)
    metrics["position_consistency"] = rate_metric(sums.get(CONSISTENT, 0), sums.get(PAIRS, 0))
    return JudgeWindow(n, metrics)


@dataclass(frozen=True, slots=True)
class Drift:
    metric: str
    state: str  # "firing" | "ok" | "hold" (no change)
    recent: float | None
    baseline: float | None
    message: str


def drift(sums: Mapping[str, int], recent: Mapping[str, int]) -> list[Drift]:
    """Per drifting rate, whether the recent verdicts moved from the baseline (the window without
    them); "ok" when they did not, or there are too few to say; "hold" in between (the alert
    state keeps a firing one until an evaluation says ok)."""
    out = []
    for name, (decided_field, won_field) in DRIFTING.items():
        r_n, r_k = recent.get(decided_field, 0), recent.get(won_field, 0)
        b_n, b_k = sums.get(decided_field, 0) - r_n, sums.get(won_field, 0) - r_k
        if r_n < MIN_DRIFT or b_n < MIN_DRIFT:
            out.append(
                Drift(
                    name,
                    "ok",
                    r_k / r_n if r_n else None,
                    b_k / b_n if b_n else None,
                    f"{name}: too few verdicts to compare ({r_n} recent, {b_n} before)",
                )
            )
            continue
        now, before = r_k / r_n, b_k / b_n
        pooled = (r_k + b_k) / (r_n + b_n)
        spread = math.sqrt(pooled * (1 - pooled) * (1 / r_n + 1 / b_n))
        z = abs(now - before) / spread if spread > 0 else (math.inf if now != before else 0.0)
        what = name.replace("_", " ")
        if z >= Z_FIRING and abs(now - before) >= PRACTICAL_RATE:
            out.append(
                Drift(
                    name,
                    "firing",
                    now,
                    before,
                    f"the judge's {what} moved from {before:.2f} to {now:.2f} "
                    f"over its last {r_n} counted (z = {z:.1f})",
                )
            )
        else:  # between firing and back: hold (no flapping on the edge)
            back = z < Z_BACK or abs(now - before) < PRACTICAL_RATE
            out.append(
                Drift(
                    name,
                    "ok" if back else "hold",
                    now,
                    before,
                    f"the judge's {what} is {now:.2f}, near its baseline {before:.2f}",
                )
            )
    return out
