"""The council-bias flags under simulation (issue 18): false-flag rates under the null and recall.

    python bench/council_biases.py [SESSIONS] [CORPORA]   # defaults: 20000 1000

Part 1, per session (tests/analysis/test_session_flags_simulation.py's generator): SESSIONS
sessions per case streamed through audit_batch with the tenant's noise window, as the worker
does: the share of sessions with a harsh / generous / self-preference flag under the null at
M = 3, 4, 5 members, noise SD 0.8 / 1.0 / 1.2, scores rounded to 1 or 0.5 points; then recall of a
-2.5 point reviewer, peers of it called generous, a +2 generous reviewer read as self-preferring,
and recall of a +4 self-preference.
Part 2, across sessions (tests/analysis/council_simulation.py): CORPORA 60-session corpora per
null case, CORPORA / 5 per injected bias; the share of corpora with each flag. Record the tables
in bench/RESULTS.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from rich.console import Console
from rich.table import Table

import tests.analysis.test_session_flags_simulation as per_session
from bias_audit.analysis.council_biases import (
    affinity,
    anchoring,
    pair_fit,
    self_consistency,
    style_similarity,
)
from bias_audit.analysis.window_cells import window_cells
from tests.analysis.council_simulation import MODELS, Injected, corpus


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def session_tables(console: Console, sessions: int) -> None:
    per_session.SESSIONS = sessions
    null = Table(title=f"Per-session flags under the null ({sessions} sessions per case)")
    for column in ("members", "noise SD", "rounding", "harsh", "generous", "self-preference", "window sigma"):
        null.add_column(column, justify="right")
    for members in (3, 4, 5):
        for noise, step in ((0.8, 1.0), (1.0, 1.0), (1.2, 1.0), (1.0, 0.5)):
            r = per_session.flag_rates(members, noise, step, seed=members)
            null.add_row(
                str(members),
                f"{noise}",
                f"{step}",
                pct(r["harsh"]),
                pct(r["generous"]),
                pct(r["self"]),
                pct(r["window"]),
            )
    console.print(null)
    power = Table(title=f"Per-session power ({sessions} sessions per case, rounding 1 point)")
    for column in (
        "members",
        "noise SD",
        "-2.5 reviewer found",
        "a peer of it called generous",
        "+2 generous read as self-pref.",
        "+4 self-pref. found",
    ):
        power.add_column(column, justify="right")
    for members in (3, 4, 5):
        for noise in (0.8, 1.0, 1.2):
            harsh = per_session.flag_rates(members, noise, 1.0, bias={0: -2.5}, seed=10 + members)
            generous = per_session.flag_rates(members, noise, 1.0, bias={0: 2.0}, seed=20 + members)
            own = per_session.flag_rates(members, noise, 1.0, self_bias={0: 4.0}, seed=30 + members)
            power.add_row(
                str(members),
                f"{noise}",
                pct(harsh["target_harsh"]),
                pct(harsh["bystander_generous"]),
                pct(generous["target_self"]),
                pct(own["target_self"]),
            )
    console.print(power)


def corpus_rates(injected: Injected, corpora: int, noise: float, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(("affinity", "anchoring", "style", "consistency"), 0)
    for _ in range(corpora):
        cells = window_cells(corpus(rng, injected, noise=noise))
        fitted = pair_fit(cells)
        hits["affinity"] += any(a.flagged for a in affinity(cells, fitted))
        hits["anchoring"] += any(a.flagged for a in anchoring(cells, fitted))
        hits["style"] += any(a.flagged for a in style_similarity(cells, fitted))
        hits["consistency"] += any(a.flagged for a in self_consistency(cells))
    return {name: count / corpora for name, count in hits.items()}


def window_tables(console: Console, corpora: int) -> None:
    table = Table(
        title=f"Across sessions: share of 60-session corpora with each flag (4 members, {corpora} null "
        f"corpora per noise SD, {corpora // 5} per injected bias)"
    )
    for column in ("case", "noise SD", "affinity", "anchoring", "style mimicry", "self-consistency"):
        table.add_column(column, justify="right")
    for noise in (0.8, 1.0, 1.2):
        r = corpus_rates(Injected(), corpora, noise, seed=int(noise * 10))
        table.add_row("no bias", f"{noise}", *(pct(r[k]) for k in ("affinity", "anchoring", "style", "consistency")))
    cases = [
        ("affinity +1.0 (A -> B)", Injected(affinity=(MODELS[0], MODELS[1], 1.0))),
        ("affinity +0.7", Injected(affinity=(MODELS[0], MODELS[1], 0.7))),
        ("anchoring 0.4", Injected(anchoring=(MODELS[2], 0.4))),
        ("anchoring 0.3", Injected(anchoring=(MODELS[2], 0.3))),
        ("style 3 pts/similarity", Injected(style=(MODELS[3], 3.0))),
        ("style 2 pts/similarity", Injected(style=(MODELS[3], 2.0))),
        ("noise SD 2.0 vs 1.0", Injected(inconsistent=(MODELS[1], 2.0))),
        ("noise SD 1.6 vs 1.0", Injected(inconsistent=(MODELS[1], 1.6))),
    ]
    for name, injected in cases:
        r = corpus_rates(injected, corpora // 5, 1.0, seed=7)
        table.add_row(name, "1.0", *(pct(r[k]) for k in ("affinity", "anchoring", "style", "consistency")))
    console.print(table)


def main(sessions: int = 20000, corpora: int = 1000) -> None:
    console = Console(width=150)
    session_tables(console, sessions)
    window_tables(console, corpora)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
