-- A list's totalCount counts the tenant's rows that pass its filter. With the filter's columns in
-- the page index (INCLUDE: not part of its order), the count reads the index alone (an index-only
-- scan) instead of visiting every matching row's wide heap tuple, and a page skips rows the filter
-- refuses before reading them.
DROP INDEX llm_interaction_audit_tenant_time;
CREATE INDEX llm_interaction_audit_tenant_time ON llm_interaction_audit (tenant_id, log_timestamp, id)
    INCLUDE (bias_detected, human_reviewed, llm_model, llm_provider, user_id, bias_confidence_score, decision_id);
