-- The question of a verdict sampled for people's review, so a person can judge correctness: kept
-- only here, beside the sampled answers, and removed with them by retention (`anonymize_after_days`).
-- The verdict rows never hold it.
ALTER TABLE judge_review_item ADD COLUMN question text;
