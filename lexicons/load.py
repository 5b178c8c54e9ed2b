"""Read the shipped data files (or an operator's own rule file / axis lexicon) into Lexicons.
Every problem is a LexiconError with one line naming the file and what is wrong."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

import re2
import yaml

from bias_audit.analysis.responses.lexicon import Lexicons, Rule
from bias_audit.analysis.responses.linguistic import compile_rule


class LexiconError(ValueError):
    """A lexicon or rule file that cannot be used; the message says which and why."""


def _shipped(name: str) -> str:
    return resources.files("bias_audit.lexicons").joinpath(name).read_text(encoding="utf-8")


def _read(path: Path | None, name: str) -> str:
    if path is None:
        return _shipped(name)
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise LexiconError(f"{path}: {error}") from None


def parse_rules(text: str, where: str, taxonomy: dict) -> list[Rule]:
    try:
        items = yaml.safe_load(text) or []
    except yaml.YAMLError as error:
        raise LexiconError(f"{where}: not valid YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(items, list):
        raise LexiconError(f"{where}: expected a list of rules")
    rules = []
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise LexiconError(f"{where}: rule {number} is not a mapping")
        missing = [k for k in ("id", "pattern", "bias_type", "severity", "mitigation") if k not in item]
        if missing:
            raise LexiconError(f"{where}: rule {item.get('id', number)!r} lacks {', '.join(missing)}")
        if item["bias_type"] not in taxonomy:
            raise LexiconError(
                f"{where}: rule {item['id']!r} has bias_type {item['bias_type']!r}, "
                f"not in the taxonomy ({', '.join(sorted(taxonomy))})"
            )
        severity = item["severity"]
        if not isinstance(severity, int) or not 1 <= severity <= 5:
            raise LexiconError(f"{where}: rule {item['id']!r} severity must be an integer 1-5")
        for field in ("pattern", "unless"):
            if field not in item:
                continue
            try:
                compile_rule(str(item[field]))
            except re2.error as error:
                raise LexiconError(
                    f"{where}: rule {item['id']!r} {field} does not compile as RE2 (case-insensitive, "
                    f"8 MiB): {error}; backreferences and lookaround are not supported, and a huge "
                    "pattern must be split"
                ) from None
        unless = str(item["unless"]) if item.get("unless") is not None else None
        rules.append(
            Rule(str(item["id"]), str(item["pattern"]), item["bias_type"], severity, str(item["mitigation"]), unless)
        )
    return rules


def load_lexicons(rules_file: Path | None = None, axes_file: Path | None = None) -> Lexicons:
    """The shipped lexicons; an operator's rule file or axis lexicon replaces the shipped one."""
    taxonomy = json.loads(_shipped("taxonomy.json"))["types"]
    try:
        document = json.loads(_read(axes_file, "axes.json"))["axes"]
        axes = {
            str(axis): {str(group): [str(term) for term in terms] for group, terms in groups.items()}
            for axis, groups in document.items()
        }
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
        raise LexiconError(
            f"{axes_file}: expected JSON with an 'axes' object of axis -> group -> [terms] "
            f"({type(error).__name__}: {error})"
        ) from None
    titles = json.loads(_shipped("gendered_titles.json"))
    toxic = json.loads(_shipped("toxicity.json"))
    for pattern in toxic["dehumanizing_patterns"]:
        compile_rule(pattern)
    return Lexicons(
        axes=axes,
        dispreferred=json.loads(_shipped("dispreferred.json"))["terms"],
        titles=titles["titles"],
        generic_he_roles=titles["generic_he"]["roles"],
        insults=toxic["insults"],
        slurs=toxic["slurs"],
        dehumanizing=toxic["dehumanizing_patterns"],
        rules=parse_rules(_read(rules_file, "rules.yaml"), str(rules_file or "rules.yaml (shipped)"), taxonomy),
        taxonomy=taxonomy,
        swaps=json.loads(_shipped("gender_swaps.json"))["pairs"],
    )


@lru_cache(maxsize=1)
def replay_groups() -> dict[str, dict[str, list[str]]]:
    """A few groups per axis, each with word forms aligned by position: replay rewrites a prompt
    from one group to another with them, and the worker reads which group a query names."""
    return json.loads(_shipped("replay_groups.json"))["axes"]


@lru_cache(maxsize=1)
def shipped_lexicons() -> Lexicons:
    return load_lexicons()
