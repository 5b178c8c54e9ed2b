-- A list filtered by bias type read the type's rows of every tenant from the GIN index and threw
-- away the other tenants' after reading them. With the tenant in the same GIN index (btree_gin: a
-- trusted extension, so the tables' owner may create it) a page and its count read the tenant's
-- rows of that type alone. A condition on the type alone still uses it (a GIN index serves any
-- subset of its columns), so it replaces the index on the type.
CREATE EXTENSION IF NOT EXISTS btree_gin;
DROP INDEX llm_interaction_audit_bias_type;
CREATE INDEX llm_interaction_audit_bias_type ON llm_interaction_audit USING gin (tenant_id, bias_type);

-- A reviewer's list of flagged items, and its totalCount, read every entry of the tenant's page
-- index to keep the flagged ones. The flagged items' own index, in the page's order with the other
-- filters' columns included, gives the page and the count from the flagged entries alone; it still
-- serves the flagged and unreviewed ones (human_reviewed is among its columns), as the index it
-- replaces did.
DROP INDEX llm_interaction_audit_flagged;
CREATE INDEX llm_interaction_audit_flagged ON llm_interaction_audit (tenant_id, log_timestamp, id)
    INCLUDE (human_reviewed, llm_model, llm_provider, user_id, bias_confidence_score, decision_id)
    WHERE bias_detected;
