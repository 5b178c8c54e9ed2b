"""Text from events (ids, labels, messages quoting them) made safe for a terminal, credentials
taken out of anything we print, and counts and sizes written as a person reads them."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (CSI, OSC as one byte), and the bidi
# overrides that reorder what a reader sees
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^:/@\s]*):(?P<secret>[^@/\s]*)@")
# the same secrets as parameters: a URL's query (?password=) or a libpq "key=value" string
_SECRET_PARAMETERS = re.compile(
    r"(?P<key>(?:^|(?<=[?&;\s]))(?:password|passwd|pwd|sslpassword|secret|token|"
    r"access_token|api_key|apikey)=)(?P<value>'[^']*'|[^&;\s]*)",
    re.IGNORECASE,
)


def visible(text: str) -> str:
    """Every control character as its escape (ESC -> \\x1b): a terminal shows it, never runs it."""
    return _UNSAFE.sub(lambda match: match.group(0).encode("unicode_escape").decode("ascii"), text)


def one_line(text: str) -> str:
    """visible(), and newlines and tabs escaped too: a line can never be split or faked."""
    return visible(text).replace("\t", "\\t").replace("\n", "\\n")


def redact(text: str) -> str:
    """URLs with a password print as scheme://user:***@host; password=, token= and their kin
    (in a URL's query or a libpq string) as password=***."""
    shown = _CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    return _SECRET_PARAMETERS.sub(lambda m: f"{m['key']}***", shown)


def reason_of(error: BaseException) -> str:
    """An exception's first line (a driver's message can run to several), else its type's name."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def plural(n: int, word: str, words: str | None = None) -> str:
    """ "1 item", "2 items", "1,000 items"."""
    return f"{n:,} {word if n == 1 else words or word + 's'}"


def size_text(size: int) -> str:
    """A byte count as a person reads it: 512 B, 3.4 KB, 12.0 MB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


# what names a stored row in a message: its table's key
ROW_KEYS = {
    "records": ("tenant_id", "session_id", "reviewer_id", "model_id"),
    "interactions": ("tenant_id", "audit_id"),
    "verdicts": ("tenant_id", "verdict_id"),
}


def row_name(table: str, row: dict[str, object]) -> str:
    """'the verdicts row (tenant_id 'acme', verdict_id 'v1')'."""
    return f"the {table} row ({', '.join(f'{name} {row.get(name)!r}' for name in ROW_KEYS[table])})"
