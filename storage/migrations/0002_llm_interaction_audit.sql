-- One row per audited LLM interaction: the design document's audit log plus ours. There is no
-- column for the raw query, ever (query_hash: its HMAC, at consent 4 only).
CREATE TABLE llm_interaction_audit (
    id                    bigserial    PRIMARY KEY,
    audit_id              text         NOT NULL,
    tenant_id             text         NOT NULL,
    user_id               text,
    trace_id              text,
    query_context         jsonb,                      -- free-form context: not kept yet (null)
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
    log_timestamp         timestamptz  NOT NULL,      -- the event's time
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
    UNIQUE (tenant_id, audit_id)                      -- a redelivery writes nothing twice
);
CREATE INDEX llm_interaction_audit_tenant_time ON llm_interaction_audit (tenant_id, log_timestamp);
CREATE INDEX llm_interaction_audit_flagged ON llm_interaction_audit (tenant_id, log_timestamp)
    WHERE bias_detected AND NOT human_reviewed;      -- the review queue
CREATE INDEX llm_interaction_audit_bias_type ON llm_interaction_audit USING gin (bias_type);
CREATE INDEX llm_interaction_audit_confidence ON llm_interaction_audit (bias_confidence_score);
