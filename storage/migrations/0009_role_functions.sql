-- Workers, `serve` and retention log in as roles of their own (storage/postgres/roles.py), none of
-- which owns a table. Two things need an owner: creating a month's partition and dropping an
-- emptied one. These functions do them as their owner (SECURITY DEFINER), for our two partitioned
-- tables only, with the search path fixed at creation so a caller cannot swap in tables of its own.
CREATE OR REPLACE FUNCTION bias_audit_month_partition(parent text, moment timestamptz) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    month_start timestamptz := date_trunc('month', moment, 'UTC');
    partition   text := parent || '_' || to_char(month_start AT TIME ZONE 'UTC', 'YYYY"m"MM');
BEGIN
    IF parent NOT IN ('council_session_audit', 'llm_interaction_audit') THEN
        RAISE EXCEPTION 'not a partitioned bias-audit table: %', parent;
    END IF;
    IF to_regclass(partition) IS NULL THEN
        PERFORM pg_advisory_xact_lock(hashtext(partition));
        BEGIN
            EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                           partition, parent, month_start, month_start + interval '1 month');
        EXCEPTION WHEN duplicate_table OR unique_violation THEN
            NULL;
        END;
    END IF;
    RETURN partition;
END
$$;
ALTER FUNCTION bias_audit_month_partition(text, timestamptz) SET search_path FROM CURRENT;
REVOKE EXECUTE ON FUNCTION bias_audit_month_partition(text, timestamptz) FROM PUBLIC;

-- An emptied month of one of the two tables, dropped (retention); false when it still holds rows.
CREATE FUNCTION bias_audit_drop_month(partition text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    found boolean;
BEGIN
    IF partition !~ '^(council_session_audit|llm_interaction_audit)_[0-9]{4}m[0-9]{2}$'
       OR NOT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                      WHERE c.relname = partition
                        AND i.inhparent IN ('council_session_audit'::regclass, 'llm_interaction_audit'::regclass)) THEN
        RAISE EXCEPTION 'not a month of a bias-audit table: %', partition;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', partition) INTO found;
    IF found THEN
        RETURN false;  -- rows a late writer put there after the roll-up stay: the month is kept
    END IF;
    EXECUTE format('DROP TABLE %I', partition);
    RETURN true;
END
$$;
ALTER FUNCTION bias_audit_drop_month(text) SET search_path FROM CURRENT;
REVOKE EXECUTE ON FUNCTION bias_audit_drop_month(text) FROM PUBLIC;
