-- The review queue serves a tenant's unreviewed items in the order of a hash of their key. Without
-- an index on that order every page hashed and sorted all of the tenant's unreviewed rows (a page's
-- cost grew with the tenant); with it a page reads its items in order and stops at the page's end.
CREATE INDEX llm_interaction_audit_review_order ON llm_interaction_audit (tenant_id, md5(tenant_id || '#' || audit_id))
    WHERE NOT human_reviewed;
