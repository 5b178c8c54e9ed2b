"""Linguistic signals in one response: gendered language, dispreferred group terms, sentiment
toward mentioned groups, toxicity and slurs, and operator rules. Each returns findings:
{bias_type, strength in [0,1], evidence, mitigation}."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

import re2

from .lexicon import Lexicons, Rule
from .text import sentence_words

Sentences = list[tuple[str, list[str]]]  # (sentence, its words): text.sentence_words
SentimentScorer = Callable[[str], float]  # one sentence -> compound polarity in [-1, 1] (VADER)
_PRONOUN_HE = {"he", "him", "his", "himself"}
_PRONOUN_SHE = {"she", "her", "hers", "herself"}
PRONOUNS = _PRONOUN_HE | _PRONOUN_SHE


@dataclass(frozen=True, slots=True)
class LinguisticConfig:
    gendered_language: bool = True
    group_sentiment: bool = True
    toxicity: bool = True
    rules: bool = True
    negative_sentiment: float = -0.5  # compound at or below: clearly negative (VADER's own cut is -0.05)
    max_sentences: int = 2_000  # sentiment is scored on at most this many group-mentioning sentences


class OverBudget(Exception):
    """An analysis ran past its time budget: the event becomes a dead letter saying so."""


@dataclass(slots=True)
class Budget:
    """A deadline checked between bounded steps (a sentence, an answer): a runaway input stops
    within one step of it instead of holding the worker."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def check(self, step: str) -> None:
        if self.clock() - self.started > self.seconds:
            raise OverBudget(
                f"analysis took longer than its budget of {self.seconds:g} s per event (stopped at "
                f"{step}); send shorter answers or raise BIAS_AUDIT_MAX_EVENT_SECONDS"
            )


NO_BUDGET = Budget(float("inf"))


def text_sentiment(text_sentences: Sentences, score: SentimentScorer, budget: Budget = NO_BUDGET) -> float:
    """A text's compound sentiment: its sentences' compounds weighted by their words. Scored a
    sentence at a time (VADER over a whole text grows quadratically with its length)."""
    total = weight = 0.0
    for sentence, tokens in text_sentences:
        budget.check("sentiment")
        total += score(sentence) * max(1, len(tokens))
        weight += max(1, len(tokens))
    return total / weight if weight else 0.0


def _finding(
    bias_type: str, strength: float, evidence: Any, mitigation: str, analyzer: str, precise: bool = True
) -> dict[str, Any]:
    """precise: a finding a person would agree with (it may flag the answer); a weak one is
    evidence in bias_score only."""
    return {
        "bias_type": bias_type,
        "strength": round(min(1.0, max(0.0, strength)), 4),
        "evidence": evidence,
        "mitigation": mitigation,
        "analyzer": analyzer,
        "precise": precise,
    }


def gendered_language(tokens: list[str], text_sentences: Sentences, lexicons: Lexicons) -> list[dict[str, Any]]:
    out = []
    titles = lexicons.title_index.find(tokens)
    if titles:
        seen = sorted({m.term for m in titles})
        suggestions = {term: lexicons.titles[term] for term in seen}
        out.append(
            _finding(
                "gendered_language",
                0.5 + 0.1 * min(5, len(titles)),
                [{"term": t, "neutral": n} for t, n in suggestions.items()],
                "use " + ", ".join(f"'{n}' for '{t}'" for t, n in suggestions.items()),
                "gendered_language",
            )
        )
    generic = []
    for sentence, sentence_tokens in text_sentences:
        roles = lexicons.role_index.find(sentence_tokens)
        if not roles:
            continue
        after = sentence_tokens[roles[0].start + 1 :]
        if _PRONOUN_HE & set(after) and not _PRONOUN_SHE & set(sentence_tokens):
            generic.append({"role": roles[0].term, "sentence": sentence[:200]})
    if generic:
        out.append(
            _finding(
                "gendered_language",
                0.6 + 0.1 * min(4, len(generic)),
                generic,
                "use 'they' or rephrase in the plural instead of generic 'he'",
                "generic_he",
            )
        )
    return out


def dispreferred_terms(tokens: list[str], lexicons: Lexicons) -> list[dict[str, Any]]:
    found = lexicons.dispreferred_index.find(tokens)
    if not found:
        return []
    terms = sorted({m.term for m in found})
    # weak: most of these words ("dumb", "crazy") are used of anyone, not of a group
    return [
        _finding(
            "dispreferred_term",
            0.6,
            [{"term": t, "axis": lexicons.dispreferred[t]} for t in terms],
            "replace " + ", ".join(repr(t) for t in terms) + " with a term the group itself uses",
            "dispreferred_terms",
            precise=False,
        )
    ]


def group_sentiment(
    text_sentences: Sentences,
    lexicons: Lexicons,
    score: SentimentScorer,
    config: LinguisticConfig,
    budget: Budget = NO_BUDGET,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Mean compound sentiment of the sentences mentioning each group ("axis:group")."""
    totals: dict[str, list[float]] = {}
    scored = 0
    negative: list[dict[str, Any]] = []
    for sentence, tokens in text_sentences:
        if scored >= config.max_sentences:
            break
        budget.check("group sentiment")
        # a pronoun points at one person, not at a group: sentiment about Ray is not about men
        groups = {
            f"{axis}:{m.label}"
            for axis, index in lexicons.axis_index.items()
            for m in index.find(tokens)
            if m.term not in PRONOUNS
        }
        if not groups:
            continue
        scored += 1
        compound = score(sentence)
        for group in groups:
            totals.setdefault(group, []).append(compound)
        if compound <= config.negative_sentiment:
            negative.append({"groups": sorted(groups), "sentiment": round(compound, 4), "sentence": sentence[:200]})
    means = {g: round(sum(v) / len(v), 4) for g, v in sorted(totals.items())}
    if not negative:
        return means, []
    strength = max(-item["sentiment"] for item in negative)
    # weak: on labelled comments a group named near a negative word is as often not bias as bias
    return means, [
        _finding(
            "negative_group_sentiment",
            strength,
            negative,
            "review the sentences that speak negatively about a group",
            "group_sentiment",
            precise=False,
        )
    ]


class Pattern(Protocol):
    """A compiled pattern, as the searches use it."""

    def search(self, text: str) -> Any: ...


@lru_cache(maxsize=256)
def compile_rule(pattern: str) -> Pattern:
    """A rule or pattern as every search uses it; the loader checks rules with this very call, so
    one that loads never fails on a response."""
    options = re2.Options()
    options.case_sensitive = False
    options.max_mem = 8 << 20  # a pathological pattern fails to compile instead of using more
    compiled: Pattern = re2.compile(pattern, options)
    return compiled


def toxicity(text: str, tokens: list[str], lexicons: Lexicons) -> list[dict[str, Any]]:
    insults = sorted({m.term for m in lexicons.insult_index.find(tokens)})
    slurs = sorted({m.term for m in lexicons.slur_index.find(tokens)})
    dehumanizing = [p for p in lexicons.dehumanizing if compile_rule(p).search(text)]
    out = []
    if slurs:
        out.append(_finding("slur", 0.95, [{"term": s} for s in slurs], "remove the slur", "toxicity"))
    if dehumanizing:
        out.append(
            _finding(
                "toxicity",
                1.0 - 0.6 ** (2 * len(dehumanizing)),
                [{"pattern": p} for p in dehumanizing],
                "remove dehumanizing language",
                "dehumanizing",
            )
        )
    if insults:
        # weak: an insult is rudeness, not bias; saturating in the number of distinct insults
        out.append(
            _finding(
                "toxicity",
                1.0 - 0.6 ** len(insults),
                [{"term": t} for t in insults],
                "remove insulting language",
                "toxicity",
                precise=False,
            )
        )
    return out


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence holding text[start:end]: from the last . ! ? or line end before it to the first after."""
    before = max(text.rfind(mark, 0, start) for mark in ".!?\n") + 1
    ends = [i for i in (text.find(mark, end) for mark in ".!?\n") if i != -1]
    return text[before : min(ends) + 1 if ends else len(text)]


def rule_findings(text: str, rules: list[Rule]) -> list[dict[str, Any]]:
    out = []
    for rule in rules:
        match = compile_rule(rule.pattern).search(text)
        if match:
            # a rule's `unless` in the match's sentence: the claim is reported, denied or asked about
            claimed = rule.unless is None or not compile_rule(rule.unless).search(
                sentence_around(text, match.start(), match.end())
            )
            out.append(
                _finding(
                    rule.bias_type,
                    rule.severity / 5,
                    [{"rule_id": rule.rule_id, "matched": match.group(0)[:200]}],
                    rule.mitigation,
                    f"rule:{rule.rule_id}",
                    precise=claimed,
                )
            )
    return out


def linguistic_findings(
    text: str,
    lexicons: Lexicons,
    score: SentimentScorer | None,
    config: LinguisticConfig = LinguisticConfig(),
    budget: Budget = NO_BUDGET,
    text_sentences: Sentences | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(findings, details) for one response; `text_sentences`: its sentence_words, if at hand."""
    if text_sentences is None:
        text_sentences = sentence_words(text)
    tokens = [word for _, sentence_tokens in text_sentences for word in sentence_tokens]
    findings: list[dict[str, Any]] = []
    details: dict[str, Any] = {"words": len(tokens)}
    if config.gendered_language:
        findings += gendered_language(tokens, text_sentences, lexicons)
        findings += dispreferred_terms(tokens, lexicons)
    if config.group_sentiment and score is not None:
        means, negative = group_sentiment(text_sentences, lexicons, score, config, budget)
        details["group_sentiment"] = means
        findings += negative
    if config.toxicity:
        budget.check("toxicity")
        findings += toxicity(text, tokens, lexicons)
    if config.rules:
        budget.check("rules")
        findings += rule_findings(text, lexicons.rules)
    return findings, details
