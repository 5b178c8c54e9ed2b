-- When a reviewer took an item: renewing the lease keeps it, so a lease can be renewed only up to
-- a bound (storage/audit_api.py MAX_HOLD_SECONDS), never held forever by a script that reopens it.
ALTER TABLE review_lease ADD COLUMN taken_at timestamptz NOT NULL DEFAULT now();
