"""What makes a configured secret usable (the JWT key, the query-hashing key, the webhook's key):
long enough, and not blanks or one repeated character, which anyone could guess."""

from __future__ import annotations

MIN_DISTINCT_CHARACTERS = 8


def check_secret(value: str, name: str, min_bytes: int) -> None:
    """ValueError naming the setting when `value` is too short or too uniform to be a secret."""
    if len(value.encode()) < min_bytes:
        raise ValueError(f"{name} must be at least {min_bytes} bytes; e.g. `openssl rand -hex 32`")
    if len(set(value)) < MIN_DISTINCT_CHARACTERS:  # blanks included
        raise ValueError(
            f"{name} must have at least {MIN_DISTINCT_CHARACTERS} different characters, not blanks "
            "or one repeated character; e.g. `openssl rand -hex 32`"
        )
