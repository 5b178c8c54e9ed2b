-- Recall can only be measured from reviews of answers nothing was flagged on: the review queue
-- serves a uniform share of them (each answer in when its key is under the share), and a review
-- keeps its inclusion probability (1 for a flagged answer) and the person's judgement of the whole
-- answer, biased or not.
ALTER TABLE bias_review ADD COLUMN inclusion_probability double precision;
ALTER TABLE bias_review ADD COLUMN answer_biased boolean;

-- A uniform number in [0, 1) fixed by the answer's key: the same answer is in the sample or not
-- whenever it is asked, and independently of every other answer.
CREATE FUNCTION review_sample_key(tenant text, audit text) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT ('x' || substr(md5(tenant || '/' || audit), 1, 8))::bit(32)::bigint / 4294967296.0 $$;
