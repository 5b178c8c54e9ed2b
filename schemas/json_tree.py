"""Walking a parsed JSON document, and the depth limit for the free-form JSON the tool takes in
(event context, record metadata): a value nested hundreds deep parses, then breaks whoever
serialises it again (a recursion limit in an export, a 500 in the API). The contract's own
documents are a few levels deep."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_JSON_DEPTH = 32


def nodes(document: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every value of a document with its path (keys and indexes), in document order; iterative,
    so a document of any depth is walked."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), document)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, dict):
            stack.extend(((*path, key), child) for key, child in reversed(value.items()))
        elif isinstance(value, (list, tuple)):
            stack.extend(((*path, index), child) for index, child in reversed(list(enumerate(value))))


def json_depth(value: Any) -> int:
    """Levels of nested objects and arrays (a scalar is 0)."""
    return max((len(path) + 1 for path, node in nodes(value) if isinstance(node, (dict, list, tuple))), default=0)


def bounded_depth(value: Any, what: str = "the value") -> Any:
    """The value, or ValueError naming it when it nests deeper than MAX_JSON_DEPTH."""
    if json_depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    return value
