-- Sandbox runs (`bias-audit sandbox` against the store's history): what a candidate model was
-- compared with and what was found, kept for the people who decide whether it ships.
CREATE TABLE sandbox_run (
    id          bigserial   PRIMARY KEY,
    tenant_id   text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    baseline    jsonb       NOT NULL,  -- what the baseline was: model, since, until
    worse       boolean     NOT NULL,  -- a bias type came out worse
    document    jsonb       NOT NULL   -- the sandbox's JSON document
);
CREATE INDEX sandbox_run_tenant_time ON sandbox_run (tenant_id, created_at);
