"""The audit store on PostgreSQL: one row per council session with its scored cells packed, one
per audited LLM interaction, reviews, and what retention rolled up. `schema` migrates, `rows`
encodes and decodes rows, `writer` writes a batch in one transaction, `readers` and `reviews`
read back; `records_of` rebuilds the contract's bias metric records exactly."""

from .readers import connect, every_row_as_text, read_digests, read_interactions, read_records
from .reviews import (
    LATEST_REVIEWS,
    ROLLED_UP_SPANS,
    ROLLED_UP_TOTALS,
    read_review_evidence,
    read_reviewed_items,
    read_rolled_up,
    reviewed_items_of,
    rolled_up_of,
    save_sandbox_run,
    tenant_scope,
)
from .rows import (
    INTERACTION_COLUMNS,
    SESSION_COLUMNS,
    as_our_record,
    digest_of_row,
    interaction_record,
    interaction_row,
    records_of,
    session_row,
    session_rows,
    utc_text,
)
from .schema import apply_migrations, fill_taxonomy, migrations, missing_migrations
from .writer import TRANSIENT_ERRORS, PostgresInteractionStore, PostgresRecordStore, import_records

__all__ = [
    "every_row_as_text",
    "INTERACTION_COLUMNS",
    "LATEST_REVIEWS",
    "ROLLED_UP_SPANS",
    "ROLLED_UP_TOTALS",
    "SESSION_COLUMNS",
    "TRANSIENT_ERRORS",
    "PostgresInteractionStore",
    "PostgresRecordStore",
    "apply_migrations",
    "as_our_record",
    "connect",
    "digest_of_row",
    "fill_taxonomy",
    "import_records",
    "interaction_record",
    "interaction_row",
    "migrations",
    "missing_migrations",
    "read_digests",
    "read_interactions",
    "read_records",
    "read_review_evidence",
    "read_reviewed_items",
    "read_rolled_up",
    "records_of",
    "reviewed_items_of",
    "rolled_up_of",
    "save_sandbox_run",
    "session_row",
    "session_rows",
    "tenant_scope",
    "utc_text",
]
