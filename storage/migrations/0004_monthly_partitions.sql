-- The two big tables become partitioned by month of their event time, so retention drops whole
-- months and each month's indexes stay small. A unique key of a partitioned table must hold the
-- partition key: (tenant, session) becomes (tenant, session, session_ts). A redelivery is the
-- same event with the same timestamp, so it still conflicts and writes nothing twice.

-- The month's partition of `parent` holding `moment`, created when missing. The writers call it
-- for each month of a batch before the COPY. Two workers may race for a new month: the advisory
-- lock makes the second wait for the first, whose table it may still not see (an advisory lock
-- does not refresh the catalog cache), so "already exists" is the other's success, not an error.
CREATE FUNCTION bias_audit_month_partition(parent text, moment timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    month_start timestamptz := date_trunc('month', moment, 'UTC');
    partition   text := parent || '_' || to_char(month_start AT TIME ZONE 'UTC', 'YYYY"m"MM');
BEGIN
    IF to_regclass(partition) IS NULL THEN
        PERFORM pg_advisory_xact_lock(hashtext(partition));
        BEGIN
            EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                           partition, parent, month_start, month_start + interval '1 month');
        EXCEPTION WHEN duplicate_table OR unique_violation THEN
            NULL;
        END;
    END IF;
    RETURN partition;
END
$$;

-- council_session_audit: the old table's indexes go first (their names are taken again below)
ALTER TABLE council_session_audit DROP CONSTRAINT council_session_audit_pkey;
DROP INDEX council_session_audit_tenant_time;
ALTER TABLE council_session_audit RENAME TO council_session_audit_before_0004;

CREATE TABLE council_session_audit (
    tenant_id              text        NOT NULL,
    session_id             text        NOT NULL,
    session_ts             timestamptz NOT NULL,  -- the partition key: the event's time
    ts_text                text,                  -- the record's timestamp as written, when not UTC's form
    trace_id               text,                  -- null in records imported from llm-council-core
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
    PRIMARY KEY (tenant_id, session_id, session_ts)  -- a redelivery writes nothing twice
) PARTITION BY RANGE (session_ts);
CREATE INDEX council_session_audit_tenant_time ON council_session_audit (tenant_id, session_ts);

SELECT bias_audit_month_partition('council_session_audit', month)
FROM (SELECT DISTINCT date_trunc('month', session_ts, 'UTC') AS month FROM council_session_audit_before_0004) AS months;
INSERT INTO council_session_audit SELECT * FROM council_session_audit_before_0004;
DROP TABLE council_session_audit_before_0004;

-- llm_interaction_audit: likewise; its id sequence is renamed and its position carried over
ALTER TABLE llm_interaction_audit DROP CONSTRAINT llm_interaction_audit_pkey;
ALTER TABLE llm_interaction_audit DROP CONSTRAINT llm_interaction_audit_tenant_id_audit_id_key;
DROP INDEX llm_interaction_audit_tenant_time, llm_interaction_audit_flagged, llm_interaction_audit_bias_type,
           llm_interaction_audit_confidence;
ALTER TABLE llm_interaction_audit RENAME TO llm_interaction_audit_before_0004;
ALTER SEQUENCE llm_interaction_audit_id_seq RENAME TO llm_interaction_audit_before_0004_id_seq;

CREATE TABLE llm_interaction_audit (
    id                    bigserial    NOT NULL,
    audit_id              text         NOT NULL,
    tenant_id             text         NOT NULL,
    user_id               text,
    trace_id              text,
    query_context         jsonb,                      -- free-form context: not kept (null)
    query_hash            text,
    llm_provider          text,
    llm_model             text,
    llm_response          text,                       -- the audited answer, for review; removed by retention
    prompt_tokens         bigint,
    response_tokens       bigint,
    total_tokens          bigint,
    consent_level         smallint     NOT NULL,
    record_schema         text         NOT NULL,
    status                text         NOT NULL DEFAULT 'audited',
    error_message         text,
    log_timestamp         timestamptz  NOT NULL,      -- the partition key: the event's time
    ts_text               text,                       -- the record's timestamp as written, when not UTC's form
    bias_detected         boolean      NOT NULL,
    bias_type             jsonb        NOT NULL,      -- array of bias type keys
    bias_score            jsonb        NOT NULL,      -- bias type -> evidence in [0, 1]
    bias_confidence_score numeric(5,2) NOT NULL,      -- percent: 0.8734 is stored as 87.34
    mitigation_action     jsonb        NOT NULL,
    bias_report_summary   jsonb        NOT NULL,
    human_reviewed        boolean      NOT NULL DEFAULT false,
    human_bias_tag        jsonb,
    review_notes          text,
    created_at            timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (id, log_timestamp),
    UNIQUE (tenant_id, audit_id, log_timestamp)       -- a redelivery writes nothing twice
) PARTITION BY RANGE (log_timestamp);
CREATE INDEX llm_interaction_audit_tenant_time ON llm_interaction_audit (tenant_id, log_timestamp);
CREATE INDEX llm_interaction_audit_flagged ON llm_interaction_audit (tenant_id, log_timestamp)
    WHERE bias_detected AND NOT human_reviewed;      -- the review queue
CREATE INDEX llm_interaction_audit_bias_type ON llm_interaction_audit USING gin (bias_type);
CREATE INDEX llm_interaction_audit_confidence ON llm_interaction_audit (bias_confidence_score);

SELECT bias_audit_month_partition('llm_interaction_audit', month)
FROM (SELECT DISTINCT date_trunc('month', log_timestamp, 'UTC') AS month FROM llm_interaction_audit_before_0004) AS months;
INSERT INTO llm_interaction_audit SELECT * FROM llm_interaction_audit_before_0004;
SELECT setval('llm_interaction_audit_id_seq', greatest((SELECT max(id) FROM llm_interaction_audit), 1),
              (SELECT max(id) FROM llm_interaction_audit) IS NOT NULL);
DROP TABLE llm_interaction_audit_before_0004;
