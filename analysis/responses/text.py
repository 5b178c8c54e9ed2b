"""Words and whole-word, case-folded, inflection-aware term matching.

Terms are indexed with their inflected forms (plural -s/-es/-ies, possessive 's), and matched
on word tokens, never inside a word: "men" does not match "document", "women" matches "woman"'s
plural and "women's".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# letters/digits, joined by inner hyphens or apostrophes ("hard-of-hearing", "don't"); the
# separators are not word characters, so there is no ambiguous backtracking on long input
_WORD = re.compile(r"\w+(?:[-'’]\w+)*")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


def words(text: str) -> list[str]:
    """Case-folded word tokens, possessive 's dropped."""
    out = []
    for token in _WORD.findall(text.casefold().replace("’", "'")):
        if token.endswith("'s"):
            token = token[:-2]
        out.append(token)
    return out


MAX_SENTENCE_CHARS = 400  # longer runs are cut (at a space): scoring a piece is then bounded work


def sentences(text: str) -> list[str]:
    """Sentences, a run without . ! ? or newline cut into pieces of at most MAX_SENTENCE_CHARS:
    every per-sentence analyzer is then linear in the text, whatever its punctuation."""
    out = []
    for found in _SENTENCE.findall(text):
        sentence = found.strip()
        while len(sentence) > MAX_SENTENCE_CHARS:
            cut = sentence.rfind(" ", 0, MAX_SENTENCE_CHARS + 1)
            cut = cut if cut > 0 else MAX_SENTENCE_CHARS
            out.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if sentence:
            out.append(sentence)
    return out


def sentence_words(text: str) -> list[tuple[str, list[str]]]:
    """Each sentence with its words. A word never spans . ! ? or a newline, so the sentences'
    words, joined, are the text's words: a text is tokenized once."""
    return [(sentence, words(sentence)) for sentence in sentences(text)]


def inflections(term: str) -> set[str]:
    """The forms a lexicon term is matched in (its last word inflected)."""
    head, _, last = term.casefold().rpartition(" ")
    prefix = f"{head} " if head else ""
    forms = {last, last + "s"}
    if last.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(last + "es")
    if last.endswith("y") and len(last) > 2 and last[-2] not in "aeiou":
        forms.add(last[:-1] + "ies")
    if last.endswith("man"):
        forms.add(last[:-3] + "men")
    return {prefix + form for form in forms}


@dataclass(frozen=True, slots=True)
class Match:
    term: str  # the lexicon's term (not the inflected form seen)
    label: str  # what the term stands for (a group, a neutral alternative...)
    start: int  # index of the first word


class TermIndex:
    """Multi-word terms looked up by their first word; matching is O(words x candidates)."""

    def __init__(self, terms: Mapping[str, str], *, inflect: bool = True) -> None:
        self._by_first: dict[str, list[tuple[tuple[str, ...], str, str]]] = {}
        for term, label in terms.items():
            for form in inflections(term) if inflect else {term.casefold()}:
                tokens = tuple(words(form))
                if tokens:
                    self._by_first.setdefault(tokens[0], []).append((tokens, term, label))
        for candidates in self._by_first.values():
            candidates.sort(key=lambda c: -len(c[0]))  # longest first: "trans female" before "trans"

    def find(self, tokens: list[str]) -> list[Match]:
        out: list[Match] = []
        i, n = 0, len(tokens)
        by_first = self._by_first
        while i < n:
            candidates = by_first.get(tokens[i])
            step = 1
            if candidates:
                for form, term, label in candidates:
                    if tuple(tokens[i : i + len(form)]) == form:
                        out.append(Match(term, label, i))
                        step = len(form)
                        break
            i += step
        return out


def labelled(groups: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """{group: [terms]} -> {term: group}."""
    return {term: group for group, terms in groups.items() for term in terms}
