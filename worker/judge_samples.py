"""Sample judge verdicts (the demo's judge.verdicts data): three judges on the same items, each
item judged in both orders. One judge is fair (it prefers the better answer, by a hidden quality
gap); one picks the answer shown first a third of the time whatever it says; one picks the longer
answer a third of the time. The report must flag the two and not the fair one. Every fifth item
carries its question and both answers' texts, so the review page's judge mode has items for a
person to judge; the rest carry only the answers' lengths."""

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
WITH_TEXTS_EVERY = 5
# (question, the better answer's claim, the weaker one's, sentences either may go on with)
TOPICS = [
    (
        "At what temperature does water boil at sea level?",
        "Water boils at 100 degrees Celsius at sea level, where the air pressure is one atmosphere.",
        "Water boils at about 90 degrees Celsius, a little lower than most people think.",
        [
            "Boiling starts when the vapour pressure of the water equals the pressure of the air above it.",
            "On a mountain the air pressure is lower, so water boils at a lower temperature there.",
            "A pressure cooker raises the pressure, so the water gets hotter before it boils.",
            "Dissolved salt raises the boiling point, but only by a fraction of a degree in cooking.",
            "The temperature stays at the boiling point while the water turns into steam.",
        ],
    ),
    (
        "Why do we have seasons on Earth?",
        "Seasons come from the tilt of the Earth's axis, which changes how directly sunlight hits each hemisphere.",
        "Seasons happen because the Earth is closer to the Sun in summer and farther away in winter.",
        [
            "The axis is tilted by about 23 degrees relative to the plane of the orbit.",
            "When a hemisphere leans toward the Sun, its days are longer and the sunlight is more direct.",
            "The two hemispheres have opposite seasons at the same time of year.",
            "The distance to the Sun changes a little over the year, but that is not what drives the seasons.",
            "Near the equator the seasons are mild, because the angle of the sunlight changes little.",
        ],
    ),
    (
        "What does a hash table do, and why is lookup fast?",
        "A hash table maps keys to values by hashing each key to a bucket, so a lookup takes constant time on average.",
        "A hash table keeps its keys sorted, so a lookup is a binary search over them.",
        [
            "A good hash function spreads the keys evenly over the buckets.",
            "When two keys land in the same bucket, the table resolves the collision by chaining or probing.",
            "The table grows and rehashes its keys when it gets too full, to keep the buckets short.",
            "In the worst case many keys collide and a lookup becomes slow, which is rare in practice.",
            "Python dictionaries and sets are hash tables.",
        ],
    ),
    (
        "How do vaccines protect against a disease?",
        "A vaccine trains the immune system to recognise a pathogen, so it responds quickly when the real one arrives.",
        "A vaccine kills the germs that are already in the body, like an antibiotic does.",
        [
            "Most vaccines contain a weakened or inactivated germ, or a piece of it.",
            "The body makes antibodies and memory cells in response.",
            "Memory cells let the immune system react faster and more strongly the next time.",
            "Some vaccines need a booster dose to keep the protection strong.",
            "When many people are vaccinated, the disease spreads less, which also protects others.",
        ],
    ),
    (
        "What is the difference between weather and climate?",
        "Weather is the state of the air on a given day; climate is the pattern of weather over decades in a region.",
        "Weather and climate are the same thing, one word is simply more scientific than the other.",
        [
            "A single cold day says little about the climate of a place.",
            "Climate is usually described with averages over thirty years or more.",
            "Forecasts of the weather are reliable for a few days ahead.",
            "Climate projections describe long-term trends rather than the weather of a particular day.",
            "Both are shaped by the oceans, the land and the atmosphere.",
        ],
    ),
    (
        "Why does ice float on water?",
        "Ice floats because it is less dense than liquid water: its molecules are held apart in an open crystal lattice.",
        "Ice floats because it traps a lot of air bubbles while it freezes.",
        [
            "Most substances are denser as solids than as liquids, so water is unusual.",
            "Hydrogen bonds hold the molecules of ice in a regular hexagonal pattern.",
            "Liquid water is densest at about four degrees Celsius.",
            "Because ice floats, lakes freeze from the top down and life survives below.",
            "About nine tenths of an iceberg lies below the surface.",
        ],
    ),
]


def answer_text(claim: str, sentences: list[str], words: int, rng: random.Random) -> str:
    """A readable answer of exactly `words` words: the claim, then the topic's sentences in a
    random order (again when needed), cut at the last word."""
    pool = list(sentences)
    text = claim.split()
    while len(text) < words:
        rng.shuffle(pool)
        for sentence in pool:
            text.extend(sentence.split())
    cut = text[:words]
    return " ".join(cut).rstrip(",;:") + ("" if cut[-1].endswith(".") else ".")


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
                out.append(
                    {
                        "verdict_id": f"{judge}:{item}:{game}",
                        "tenant_id": tenant,
                        "timestamp": (start + timedelta(minutes=item)).isoformat().replace("+00:00", "Z"),
                        "judge": {"model": judge, "prompt": "pairwise-v1"},
                        "item_id": f"q{item}",
                        "game": game,
                        "candidates": [{"model": m, "length_words": lengths[m]} for m in order],
                        "verdict": {"kind": "pairwise", "preference": "A>B" if first else "B>A"},
                    }
                )
        if item % WITH_TEXTS_EVERY == 0:
            _with_texts(out[-6:], item, gap, lengths, seed)
    return out


def _with_texts(verdicts: list[dict[str, Any]], item: int, gap: float, lengths: dict[str, int], seed: int) -> None:
    """The item's question, and each answer's text of the length it was given (the better model
    makes the right claim); its own random numbers, so every verdict is as it would be without."""
    rng = random.Random(f"{seed}:{item}")
    question, right, wrong, sentences = TOPICS[item // WITH_TEXTS_EVERY % len(TOPICS)]
    better = "model-a" if gap > 0 else "model-b"
    texts = {
        model: answer_text(right if model == better else wrong, sentences, words, rng)
        for model, words in lengths.items()
    }
    for verdict in verdicts:
        verdict["query"] = question
        verdict["candidates"] = [{"model": c["model"], "response": texts[c["model"]]} for c in verdict["candidates"]]


if __name__ == "__main__":
    write_jsonl(generate_verdicts(), SAMPLE_FILE)
    print(f"wrote {SAMPLE_FILE}")
