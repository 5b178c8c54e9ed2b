-- What the council-bias analytics read of each answer, never its text (issue 18), packed like
-- `cells` (see storage/postgres_store.py): per member, the 8-byte keyed fingerprint of its answer
-- (zeros: none) and its known correctness; per record, in cells' order, the scored answer's
-- similarity to the reviewer's own as uint16 ten-thousandths (65535: none). NULL where the
-- records carried none of them.
ALTER TABLE council_session_audit ADD COLUMN response_fingerprints bytea;
ALTER TABLE council_session_audit ADD COLUMN response_correct boolean[];
ALTER TABLE council_session_audit ADD COLUMN cell_similarity bytea;
