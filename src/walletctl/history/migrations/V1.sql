
CREATE SCHEMA IF NOT EXISTS walletctl;
CREATE TABLE IF NOT EXISTS walletctl.schema_version (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now(),
    applied_by text NOT NULL DEFAULT session_user
);
CREATE TABLE walletctl.events (
    seq bigint PRIMARY KEY CHECK (seq > 0),
    kind text NOT NULL CHECK (kind IN ('begin', 'complete')),
    entry bigint NOT NULL CHECK (entry > 0),
    time text NOT NULL,
    os_user text, host text, profile text, base_url text, operation text,
    original_ref text, new_ref text, amount text, currency text, outcome text,
    http_status integer, exit_code integer, batch_id text, batch_row integer,
    reason text, note text, merchant_id text, store_id text,
    operator text NOT NULL DEFAULT session_user,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    prev_hash text NOT NULL UNIQUE,
    hash text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$')
);
CREATE INDEX events_entry ON walletctl.events (entry, kind);
CREATE INDEX events_ref ON walletctl.events (original_ref);
CREATE INDEX events_new_ref ON walletctl.events (new_ref);

CREATE FUNCTION walletctl.events_operator() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF NEW.operator IS DISTINCT FROM session_user THEN
        RAISE EXCEPTION 'walletctl history: an event''s operator is the role that '
            'authenticated (%), not %', session_user, NEW.operator
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    NEW.recorded_at := clock_timestamp();
    RETURN NEW;
END
$fn$;
CREATE TRIGGER events_operator BEFORE INSERT ON walletctl.events
    FOR EACH ROW EXECUTE FUNCTION walletctl.events_operator();

-- Once per INSERT statement (a batch writes a group of events in one), over the rows it
-- added: each follows the event numbered before it, by that event's hash (with the
-- primary key and UNIQUE (prev_hash): one line, no gaps, no forks); a completion's entry
-- was begun; no entry is begun twice.
CREATE FUNCTION walletctl.events_extend() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    bad bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(2002873452, 0);
    SELECT n.seq INTO bad FROM new_events n
        LEFT JOIN walletctl.events p ON p.seq = n.seq - 1
        WHERE CASE WHEN n.seq = 1 THEN n.prev_hash <> repeat('0', 64)
                   ELSE p.seq IS NULL OR p.hash <> n.prev_hash END
        ORDER BY n.seq LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'walletctl history: event % does not extend the chain', bad
            USING ERRCODE = 'serialization_failure';
    END IF;
    SELECT n.entry INTO bad FROM new_events n WHERE n.kind = 'complete' AND NOT EXISTS (
        SELECT 1 FROM walletctl.events b WHERE b.entry = n.entry AND b.kind = 'begin')
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'walletctl history: entry % was never begun', bad
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    SELECT n.entry INTO bad FROM new_events n WHERE n.kind = 'begin' AND EXISTS (
        SELECT 1 FROM walletctl.events o WHERE o.entry = n.entry AND o.seq <> n.seq
        AND o.kind = 'begin') LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'walletctl history: entry % is begun twice', bad
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER events_extend AFTER INSERT ON walletctl.events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_extend();

CREATE FUNCTION walletctl.events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION 'walletctl history is append-only: % refused (the owner''s maintenance '
        'path disables trigger events_append_only, deliberately)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$fn$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON walletctl.events
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_refuse_change();
CREATE TRIGGER events_append_only_truncate BEFORE TRUNCATE ON walletctl.events
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_refuse_change();

REVOKE ALL ON ALL TABLES IN SCHEMA walletctl FROM PUBLIC;
REVOKE ALL ON SCHEMA walletctl FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.events_extend() FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.events_operator() FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.events_refuse_change() FROM PUBLIC;
