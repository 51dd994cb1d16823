
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
-- what a waiting operator is shown of the holder is plain text (V6's rule for every text
-- column), and the leases are not emptied by a statement no row trigger sees
ALTER TABLE walletctl.order_locks ADD CONSTRAINT order_locks_doing_plain
    CHECK (doing !~ '[\x01-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]');
CREATE TRIGGER order_locks_keep_truncate BEFORE TRUNCATE ON walletctl.order_locks
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.refuse_statement();

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
