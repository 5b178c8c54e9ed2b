-- What retention keeps of rows older than the aggregation age: daily counts per tenant, model,
-- reviewer and bias type ('' where a dimension does not apply), added to as days are rolled up.
CREATE TABLE bias_daily_aggregate (
    tenant_id   text             NOT NULL,
    day         date             NOT NULL,
    source      text             NOT NULL,  -- 'council' (scored cells) or 'interaction'
    model       text             NOT NULL,
    reviewer    text             NOT NULL,
    bias_type   text             NOT NULL,
    items       bigint           NOT NULL,  -- cells or interactions
    flagged     bigint           NOT NULL,  -- interactions with this bias type detected; self-reviews for cells
    score_sum   double precision NOT NULL,  -- cells: raw scores; interactions: confidence (0-1)
    PRIMARY KEY (tenant_id, day, source, model, reviewer, bias_type)
);
