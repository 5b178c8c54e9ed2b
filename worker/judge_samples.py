"""Sample judge verdicts (the demo's judge.verdicts data): three judges on the same items, each
item judged in both orders. One judge is fair (it prefers the better answer, by a hidden quality
gap); one picks the answer shown first a third of the time whatever it says; one picks the longer
answer a third of the time. The report must flag the two and not the fair one."""

from __future__ import annotations

import math
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

from .samples import SAMPLE_START, write_jsonl

FAIR, FIRST, VERBOSE = "judge-fair", "judge-first", "judge-long"
SAMPLE_FILE = Path(__file__).parent / "samples" / "judge_verdicts.jsonl"  # `python -m bias_audit.worker.judge_samples`
INJECTED = {FIRST: "first shown, 1 in 3", VERBOSE: "longer, 1 in 3"}


def generate_verdicts(items: int = 150, seed: int = 31, tenant: str = "demo") -> list[dict[str, Any]]:
    rng = random.Random(seed)
    start = SAMPLE_START
    out: list[dict[str, Any]] = []
    for item in range(items):
        gap = rng.gauss(0.0, 1.0)  # answer a's quality minus b's
        lengths = {"model-a": rng.randint(80, 400), "model-b": rng.randint(80, 400)}
        for judge in (FAIR, FIRST, VERBOSE):
            for game, order in ((1, ("model-a", "model-b")), (2, ("model-b", "model-a"))):
                quality_first = gap if order[0] == "model-a" else -gap
                roll = rng.random()
                if judge == FIRST and roll < 1 / 3:
                    first = True
                elif judge == VERBOSE and roll < 1 / 3:
                    first = lengths[order[0]] > lengths[order[1]]
                else:
                    first = rng.random() < 1 / (1 + math.exp(-2 * quality_first))
                out.append({
                    "verdict_id": f"{judge}:{item}:{game}", "tenant_id": tenant,
                    "timestamp": (start + timedelta(minutes=item)).isoformat().replace("+00:00", "Z"),
                    "judge": {"model": judge, "prompt": "pairwise-v1"}, "item_id": f"q{item}", "game": game,
                    "candidates": [{"model": m, "length_words": lengths[m]} for m in order],
                    "verdict": {"kind": "pairwise", "preference": "A>B" if first else "B>A"}})
    return out


if __name__ == "__main__":
    write_jsonl(generate_verdicts(), SAMPLE_FILE)
    print(f"wrote {SAMPLE_FILE}")
