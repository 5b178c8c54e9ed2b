"""Walking a parsed JSON document, and the limits on the free-form JSON the tool takes in (event
context, record metadata): a value nested hundreds deep parses, then breaks whoever serialises it
again (a recursion limit in an export, a 500 in the API); a number past 64 bits (1e19) is stored,
read back from PostgreSQL as an integer no 64-bit column or JSON writer takes. The contract's own
documents are a few levels deep and their numbers small."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_JSON_DEPTH = 32
MAX_NUMBER = 1e15  # any number an event carries: exact to the unit in a double, and in an int64


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


def bounded_json(value: Any, what: str = "the value") -> Any:
    """The value, or ValueError naming it when it nests deeper than MAX_JSON_DEPTH or holds a
    number that is not finite or lies outside +-MAX_NUMBER."""
    if json_depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    for path, node in nodes(value):
        if isinstance(node, (int, float)) and not isinstance(node, bool) and not -MAX_NUMBER <= node <= MAX_NUMBER:
            where = ".".join(str(step) for step in path) or what
            raise ValueError(f"{where}: numbers are finite and within +-{MAX_NUMBER:.0e}")
    return value
