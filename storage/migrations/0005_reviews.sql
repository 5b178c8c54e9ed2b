-- People's reviews of flagged interaction audits: every review a row of its own, never
-- overwritten (the audit row shows the latest: human_reviewed, human_bias_tag, review_notes).
CREATE TABLE bias_review (
    id          bigserial   PRIMARY KEY,
    tenant_id   text        NOT NULL,
    audit_id    text        NOT NULL,
    reviewer    text        NOT NULL,               -- the token's subject
    reviewed_at timestamptz NOT NULL DEFAULT now(),
    verdicts    jsonb       NOT NULL DEFAULT '{}',  -- bias type -> "confirmed" | "dismissed"
    tags        jsonb       NOT NULL DEFAULT '[]',  -- bias_taxonomy keys
    notes       text,
    trace_id    text                                -- the request's, for the logs
);
CREATE INDEX bias_review_item ON bias_review (tenant_id, audit_id, reviewed_at);

-- A short lease while a person has an item open: two reviewers never get the same one at once.
CREATE TABLE review_lease (
    tenant_id  text        NOT NULL,
    audit_id   text        NOT NULL,
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, audit_id)
);

-- The API's pages: newest first with the id as tie-break, so a page is an index range that stops
-- at its LIMIT (the (tenant, time) index alone left a sort of the tenant's every row).
DROP INDEX llm_interaction_audit_tenant_time;
CREATE INDEX llm_interaction_audit_tenant_time ON llm_interaction_audit (tenant_id, log_timestamp, id);
