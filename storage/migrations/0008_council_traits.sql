-- What the council-bias analytics read of each answer, never its text (issue 18): per member, the
-- keyed fingerprint of its answer and its known correctness; per record (in cells' order), the
-- scored answer's similarity to the reviewer's own. NULL where the records did not carry them.
ALTER TABLE council_session_audit ADD COLUMN response_fingerprints text[];
ALTER TABLE council_session_audit ADD COLUMN response_correct boolean[];
ALTER TABLE council_session_audit ADD COLUMN cell_similarity float8[];
