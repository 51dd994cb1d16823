
-- The desk's per-order locks as leases (docs/money.md): a row per order held, taken by one
-- statement when free, expired, or left by a session that has ended; renewed by its
-- holder's heartbeat; a client that stops renewing (frozen, cut off, killed) loses it when
-- expires_at passes, whatever its connection still looks like to the server. UNLOGGED: a
-- lease is worth nothing after a server restart (every session it names ended), so taking,
-- renewing and giving one back costs no WAL and no flush to disk.
CREATE UNLOGGED TABLE walletctl.order_locks (
    key text PRIMARY KEY CHECK (key ~ '^[0-9a-f]{64}$'),  -- sha256 of origin, merchant, store, order
    token text NOT NULL CHECK (length(token) <= 64),  -- the holder's (one per process)
    pid integer NOT NULL,  -- the holder's backend: gone, the lease is free at once
    held_by text NOT NULL DEFAULT session_user,
    doing text CHECK (length(doing) <= 100),
    taken_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE FUNCTION walletctl.order_locks_kept() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    -- who holds it is the server's to say; a lease is at most a minute ahead
    NEW.held_by := session_user;
    IF NEW.expires_at > clock_timestamp() + interval '60 seconds' THEN
        RAISE EXCEPTION 'walletctl locks: a lease lasts at most 60 s'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER order_locks_kept BEFORE INSERT OR UPDATE ON walletctl.order_locks
    FOR EACH ROW EXECUTE FUNCTION walletctl.order_locks_kept();

-- An approver learns at once: each new request is announced on channel
-- walletctl_approvals (payload: its id) when its transaction commits.
CREATE FUNCTION walletctl.approvals_announced() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_notify('walletctl_approvals', NEW.id::text);
    RETURN NULL;
END
$fn$;
CREATE TRIGGER approvals_announced AFTER INSERT ON walletctl.approvals
    FOR EACH ROW EXECUTE FUNCTION walletctl.approvals_announced();

-- operators granted before this version take leases too (setup grants new ones the same)
DO $do$
DECLARE r text;
BEGIN
    FOR r IN SELECT role FROM walletctl.roles WHERE kind = 'operator' LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON walletctl.order_locks TO %I', r);
    END LOOP;
END
$do$;
