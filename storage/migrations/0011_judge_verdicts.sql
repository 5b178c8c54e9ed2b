-- One row per LLM judge's verdict (judge.verdicts events and imported judge files). The event is
-- kept as a document without the query or the answers' texts (never stored): candidates keep
-- their model and length in words. (tenant, verdict_id) is the idempotency key: a redelivery or a
-- second import writes nothing.
CREATE TABLE judge_verdicts (
    tenant_id     text        NOT NULL,
    verdict_id    text        NOT NULL,
    verdict_ts    timestamptz NOT NULL,               -- the event's (or the source's, or the import's) time
    judge_model   text        NOT NULL,
    judge_prompt  text,
    item_id       text        NOT NULL,
    trace_id      text,
    consent_level smallint    NOT NULL,
    event         jsonb       NOT NULL,               -- the verdict event, texts removed
    stored_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, verdict_id)
);
CREATE INDEX judge_verdicts_judge_time ON judge_verdicts (tenant_id, judge_model, judge_prompt, verdict_ts);
CREATE INDEX judge_verdicts_item ON judge_verdicts (tenant_id, item_id);

-- People's own verdicts on judged items, given blind (the review page's judge mode): the
-- answers in a random order, without the judge's verdict. `preference` is in the verdict's
-- display positions (the page maps its shuffled order back), so it compares with the judge's.
CREATE TABLE judge_human_verdict (
    id          bigserial   PRIMARY KEY,
    tenant_id   text        NOT NULL,
    verdict_id  text        NOT NULL,
    reviewer    text        NOT NULL,
    preference  text        NOT NULL CHECK (preference IN ('A>>B', 'A>B', 'A=B', 'B>A', 'B>>A')),
    shown_swapped boolean   NOT NULL,
    reviewed_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, verdict_id, reviewer)
);

-- The answers of a sample of verdicts, kept so a person can judge the item blind (the review
-- page's judge mode); the verdict rows never hold them. Retention removes them with the other
-- texts (`anonymize_after_days`).
CREATE TABLE judge_review_item (
    tenant_id   text        NOT NULL,
    verdict_id  text        NOT NULL,
    item_id     text        NOT NULL,
    models      text[]      NOT NULL,                 -- in the verdict's display order
    answers     text[]      NOT NULL,
    verdict_ts  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, verdict_id)
);
CREATE INDEX judge_review_item_time ON judge_review_item (verdict_ts);
