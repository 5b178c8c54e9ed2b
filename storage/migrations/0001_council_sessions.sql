-- One row per council session: its per-session fields once, its scored cells packed (see
-- storage/postgres_store.py), from which every bias metric record is rebuilt exactly.
-- There is no column for the raw query, at any consent level.
CREATE TABLE council_session_audit (
    tenant_id              text        NOT NULL,
    session_id             text        NOT NULL,
    session_ts             timestamptz NOT NULL,  -- for queries by time
    ts_text                text,                  -- the record's timestamp as written, when not UTC's form
    trace_id               text        NOT NULL,
    consent_level          smallint    NOT NULL,
    record_schema          text        NOT NULL,
    score_scale            text        NOT NULL,
    council_config_version text,
    query_hash             text,
    query_metadata         jsonb,
    members                text[]      NOT NULL,  -- reviewers and models, each once (in a council, mostly both)
    response_chars         integer[]   NOT NULL,  -- per member; -1 for a reviewer with no answer
    response_words         integer[]   NOT NULL,
    cells                  bytea       NOT NULL,  -- per record: reviewer, model (member indexes), position, score, self
    created_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_id)           -- a redelivery writes nothing twice
);
CREATE INDEX council_session_audit_tenant_time ON council_session_audit (tenant_id, session_ts);

CREATE TABLE bias_taxonomy (
    id             serial   PRIMARY KEY,
    bias_key       text     NOT NULL UNIQUE,
    description    text     NOT NULL,
    severity_level smallint NOT NULL CHECK (severity_level BETWEEN 1 AND 5)
);
