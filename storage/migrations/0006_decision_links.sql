-- Links to the caller's decisions: an event's query_context.decision_id / reasoning_node_id, kept
-- (they are ids, not the query) so a decision graph can find the bias events behind a decision.
ALTER TABLE llm_interaction_audit ADD COLUMN decision_id text, ADD COLUMN reasoning_node_id text;
CREATE INDEX llm_interaction_audit_decision ON llm_interaction_audit (tenant_id, decision_id)
    WHERE decision_id IS NOT NULL;
