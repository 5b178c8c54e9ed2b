"""VADER (Hutto & Gilbert 2014; vaderSentiment on PyPI, MIT): its lexicon ships inside the
wheel, so sentiment works offline. Loaded once per process."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache


@lru_cache(maxsize=1)
def vader_scorer() -> Callable[[str], float]:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    return lambda text: analyzer.polarity_scores(text)["compound"]
