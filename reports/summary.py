"""The report's findings in plain words, for a reader who is not a statistician: one sentence per
flag, or what the absence of flags means."""

from __future__ import annotations

from bias_audit.schemas.report import TenantReport

_WINDOW = {
    "LENGTH_BIAS": "Longer answers get higher scores, more than chance would explain.",
    "LENGTH_PREFERENCE_IN_SCORES": "Longer answers score higher even when the same models' answers are compared.",
    "POSITION_BIAS_PRIMACY": "Answers shown first score higher than the same models' answers shown later.",
    "POSITION_BIAS_RECENCY": "Answers shown last score higher than the same models' answers shown earlier.",
    "POSITION_BIAS_MIXED": "Where an answer is shown changes its score.",
    "RANDOMIZATION_BROKEN": "The order answers are shown in is not random: some models keep their places.",
    "ORDER_SHARED_ACROSS_REVIEWERS": "Every reviewer sees the answers in the same order, so an order effect "
    "cannot be told apart from the answers themselves.",
}
_PER_MEMBER = {
    "HARSH": "{0} scores lower than the other reviewers do.",
    "GENEROUS": "{0} scores higher than the other reviewers do.",
    "SELF_PREFERENCE": "{0} scores its own answers higher than its peers score them.",
    "ANCHORING": "{0}'s scores lean toward the first answer it read.",
    "STYLE_MIMICRY": "{0} favours answers written like its own.",
    "INCONSISTENT": "{0} scores the same answer differently when it sees it again.",
}
_PAIRS = {
    "AFFINITY": "{0} favours {1}'s answers beyond what either explains.",
    "COLLUSION": "{0} and {1} favour each other's answers.",
    "DISFAVOUR": "{0} scores {1}'s answers lower than the others do.",
}


def plain_findings(t: TenantReport) -> list[str]:
    """One sentence per flag of the tenant's window; with none, what that does and does not mean."""
    sentences = []
    for flag in t.flags:
        kind, _, subject = flag.partition(":")
        if kind in _WINDOW:
            driver = t.finding_drivers.get(flag)
            sentences.append(
                _WINDOW[kind]
                + (f" It comes mostly from {driver}: without its scores the test no longer finds it." if driver else "")
            )
        elif kind in _PER_MEMBER:
            sentences.append(_PER_MEMBER[kind].format(subject))
        elif kind in _PAIRS:
            sentences.append(_PAIRS[kind].format(*subject.split("->", 1)))
        elif kind == "TREND":
            metric, _, name = subject.partition(":")
            sentences.append(f"{name}'s {metric.replace('_', ' ')} changed since the window before this one.")
        else:
            sentences.append(flag)
    if sentences:
        return sentences
    if t.confidence == "insufficient":
        return [f"Too early to tell: {t.sessions} sessions so far, and the tests need at least 10."]
    return [
        f"Nothing stands out in {t.sessions} sessions: no bias passed its test. That is not proof of "
        "fairness: a small bias needs more sessions to show."
    ]
