"""The lexicons and rules the analyzers read, as plain data with their match indexes built once.
Loading them from files is the edge's job (`lexicons.load`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .text import TermIndex, labelled


@dataclass(frozen=True, slots=True)
class Rule:
    rule_id: str
    pattern: str  # RE2 syntax, matched case-insensitively
    bias_type: str
    severity: int  # 1-5
    mitigation: str
    unless: str | None = None  # RE2: a match in a sentence that also matches this is reported or denied, not claimed


@dataclass(frozen=True)
class Lexicons:
    axes: dict[str, dict[str, list[str]]]  # axis -> group -> terms
    dispreferred: dict[str, str] = field(default_factory=dict)  # term -> axis
    titles: dict[str, str] = field(default_factory=dict)  # gendered title -> neutral alternative
    generic_he_roles: list[str] = field(default_factory=list)
    insults: list[str] = field(default_factory=list)
    slurs: list[str] = field(default_factory=list)
    dehumanizing: list[str] = field(default_factory=list)  # RE2 patterns
    rules: list[Rule] = field(default_factory=list)
    taxonomy: dict[str, dict[str, Any]] = field(default_factory=dict)  # bias type -> {description, severity}
    swaps: dict[str, str] = field(default_factory=dict)  # word -> its counterpart (gender swaps)

    @cached_property
    def axis_index(self) -> dict[str, TermIndex]:
        return {axis: TermIndex(labelled(groups)) for axis, groups in self.axes.items()}

    @cached_property
    def title_index(self) -> TermIndex:
        return TermIndex(self.titles, inflect=False)  # the table lists plurals itself

    @cached_property
    def dispreferred_index(self) -> TermIndex:
        return TermIndex(self.dispreferred)

    @cached_property
    def insult_index(self) -> TermIndex:
        return TermIndex({word: "insult" for word in self.insults}, inflect=False)

    @cached_property
    def slur_index(self) -> TermIndex:
        return TermIndex({word: "slur" for word in self.slurs})

    @cached_property
    def role_index(self) -> TermIndex:
        return TermIndex({role: "role" for role in self.generic_he_roles}, inflect=False)

    def severity(self, bias_type: str) -> int:
        return int(self.taxonomy.get(bias_type, {}).get("severity", 3))
