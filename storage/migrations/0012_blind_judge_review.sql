-- What the review page's judge mode served to whom. A person's verdict is taken only on an item
-- served to them, under the opaque id it was served with (the producer's verdict id can name the
-- judge), in the order the server drew (the page cannot claim another). Removed with the item.
CREATE TABLE judge_review_served (
    review_id     text        PRIMARY KEY,
    tenant_id     text        NOT NULL,
    verdict_id    text        NOT NULL,
    reviewer      text        NOT NULL,
    shown_swapped boolean     NOT NULL,
    served_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, verdict_id) REFERENCES judge_review_item ON DELETE CASCADE
);
CREATE INDEX judge_review_served_reviewer ON judge_review_served (tenant_id, verdict_id, reviewer);

-- A change of mind is a new row, so the history is kept; the first verdict a person gave on an
-- item counts (it was given blind: afterwards the judge report may show them the judge's verdict).
ALTER TABLE judge_human_verdict DROP CONSTRAINT judge_human_verdict_tenant_id_verdict_id_reviewer_key;
ALTER TABLE judge_human_verdict ADD COLUMN review_id text;
CREATE INDEX judge_human_verdict_item ON judge_human_verdict (tenant_id, verdict_id, reviewer, id);
