"""A depth limit for the free-form JSON the tool takes in (event context, record metadata, files):
a value nested hundreds deep parses, then breaks whoever serialises it again (a recursion limit
in an export, a 500 in the API). The contract's own documents are a few levels deep."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MAX_JSON_DEPTH = 32


def json_depth(value: Any) -> int:
    """Levels of nested objects and arrays (a scalar is 0); iterative, so any depth is measured."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def bounded_depth(value: Any, what: str = "the value") -> Any:
    """The value, or ValueError naming it when it nests deeper than MAX_JSON_DEPTH."""
    if json_depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    return value
