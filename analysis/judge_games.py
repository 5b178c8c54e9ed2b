"""One judge's verdict on one item, normalized: what every judge metric reads.

Every source (our events, JudgeBench, AlpacaEval, MT-Bench, the Language Model Council) is
turned into JudgedGames; the metrics never see a source's own shape. Positions are display
positions (0 = shown first = "A"); a level is the verdict on the 5-step scale A>>B .. B>>A as
+2 .. -2, positive preferring the candidate shown first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bias_audit.schemas.scale import parse_score_scale

from ._text import count_words

PREFERENCE_LEVELS = {"A>>B": 2, "A>B": 1, "A=B": 0, "B>A": -1, "B>>A": -2}
LEVEL_NAMES = {level: name for name, level in PREFERENCE_LEVELS.items()}


@dataclass(frozen=True, slots=True)
class JudgedGame:
    judge: str  # the judge's model id, as the source writes it
    prompt: str | None  # the judge's prompt or template: the same model under two prompts is two judges
    item: str  # the question / pair; games of one item are the same candidates in swapped orders
    models: tuple[str, ...]  # candidates' models in display order
    level: int | None  # -2..2, positive prefers the first shown; None: a failed game
    p_first: float | None = None  # P(first preferred): 1 / 0.5 / 0 for hard verdicts, else the probability
    game: int | None = None  # 1, 2, ...: game 2 shows game 1's candidates in the other order
    repetition: int = 0
    order_known: bool = True  # False: the source does not record which candidate was shown first
    order_randomized: bool = False  # the source drew each item's display order at random
    lengths: tuple[int | None, ...] = ()  # words per candidate, in display order
    baseline: int | None = None  # position of the source's reference answer
    label: int | None = None  # the reference verdict's direction (-1, 0, 1) in this game's positions
    humans: tuple[int, ...] = ()  # human verdicts' levels in this game's positions
    score: float | None = None  # single-answer grading: the one candidate's score
    scale: tuple[float, float] | None = None  # the score's scale as the source names it (e.g. 1-10)

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.judge, self.prompt)

    @property
    def failed(self) -> bool:
        """The judge gave no verdict: no side preferred and no score."""
        return self.level is None and self.score is None

    @property
    def direction(self) -> int | None:
        """-1, 0, 1: the verdict's side, strength ignored; None for a failed game."""
        return None if self.level is None else (self.level > 0) - (self.level < 0)


def level_of(preference: str) -> int:
    """A>>B .. B>>A as +2 .. -2; a one-line error for anything else."""
    try:
        return PREFERENCE_LEVELS[preference.strip()]
    except (KeyError, AttributeError):
        raise ValueError(f"preference must be one of {', '.join(PREFERENCE_LEVELS)}, not {preference!r}") from None


def sign(value: float) -> int:
    return (value > 0) - (value < 0)


def word_count(text: str) -> int:
    """Words as whitespace-separated runs, as the council audit counts them."""
    return count_words(text)


def stored_verdict(document: dict[str, Any], responses: Sequence[str | None]) -> dict[str, Any]:
    """A validated verdict event as it is stored: the document without texts (the schema
    excludes them), each candidate's length in words taken from its answer when it gave none."""
    for candidate, response in zip(document["candidates"], responses):
        if candidate.get("length_words") is None and response is not None:
            candidate["length_words"] = word_count(response)
    return document


def game_from_event(event: Mapping[str, Any]) -> JudgedGame:
    """A verdict event (the contract's shape, already validated) as a JudgedGame."""
    candidates = event["candidates"]
    models = tuple(c["model"] for c in candidates)
    verdict = event["verdict"]
    kind = verdict["kind"]
    level: int | None
    p_first: float | None
    score: float | None = None
    scale: tuple[float, float] | None = None
    if kind == "pairwise":
        level = level_of(verdict["preference"])
        p_first = (sign(level) + 1) / 2
    elif kind == "probability":
        p_first = float(verdict["p_first"])
        level = sign(p_first - 0.5)
    elif kind == "scores":
        scores = verdict["scores"]
        if len(scores) == 2:
            level = sign(scores[0] - scores[1])
            p_first = (level + 1) / 2
        else:  # one answer scored alone (single-answer grading): a score, no side to prefer
            level, p_first = None, None
            if len(scores) == 1:
                score, scale = float(scores[0]), scale_of(verdict.get("scale"))
    else:
        level, p_first = None, None
    lengths = tuple(
        c.get("length_words")
        if c.get("length_words") is not None
        else (word_count(c["response"]) if c.get("response") is not None else None)
        for c in candidates
    )
    baseline = next((i for i, c in enumerate(candidates) if c.get("baseline")), None)
    humans = []
    for human in event.get("human") or ():
        if human.get("preference") is not None:
            humans.append(level_of(human["preference"]))
        elif human.get("preferred_model") is not None and len(models) == 2 and models[0] != models[1]:
            humans.append(1 if human["preferred_model"] == models[0] else -1)
        elif human.get("tie"):
            humans.append(0)
    label = event.get("label")
    judge = event["judge"]
    return JudgedGame(
        judge=judge["model"],
        prompt=judge.get("prompt"),
        item=event["item_id"],
        models=models,
        level=level,
        p_first=p_first,
        game=event.get("game"),
        repetition=event.get("repetition") or 0,
        order_known=event.get("order_known", True),
        order_randomized=bool(event.get("order_randomized")),
        lengths=lengths,
        baseline=baseline,
        label=None if label is None else sign(level_of(label)),
        humans=tuple(humans),
        score=score,
        scale=scale,
    )


def scale_of(name: object) -> tuple[float, float] | None:
    """A score scale named "min-max" (MT-Bench's "1-10"); None for "unbounded" or no name."""
    if not isinstance(name, str):
        return None
    try:
        return parse_score_scale(name)
    except ValueError:
        return None
