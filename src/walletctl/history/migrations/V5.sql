
CREATE TABLE walletctl.findings (
    id bigint PRIMARY KEY,
    merchant_id text NOT NULL, store_id text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('unrecorded', 'absent', 'state', 'amount', 'type',
                                       'unknown')),
    original text NOT NULL, reference text NOT NULL,
    entry bigint NOT NULL DEFAULT 0,
    movement_by text,
    detail text NOT NULL CHECK (length(detail) <= 500),
    recorded_at text NOT NULL,
    recorded_by text NOT NULL DEFAULT session_user,
    state text NOT NULL CHECK (state IN ('open', 'resolved')),
    resolved_at text, resolved_by text,
    resolution text CHECK (length(resolution) <= 500),
    resolved_entry bigint,
    UNIQUE (merchant_id, store_id, kind, reference, entry),
    CHECK ((state = 'open') = (resolved_by IS NULL))
);
CREATE INDEX findings_ref ON walletctl.findings (merchant_id, store_id, reference);

CREATE FUNCTION walletctl.findings_kept() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM walletctl.roles WHERE role = session_user
                       AND kind IN ('operator', 'approver'))
                AND NOT has_table_privilege(session_user, 'walletctl.policy', 'INSERT') THEN
            RAISE EXCEPTION 'walletctl findings: % may not record findings in this history',
                session_user USING ERRCODE = 'insufficient_privilege';
        END IF;
        NEW.recorded_by := session_user;
        NEW.state := 'open';
        NEW.resolved_at := NULL; NEW.resolved_by := NULL;
        NEW.resolution := NULL; NEW.resolved_entry := NULL;
        -- who made the movement is the chain's to say, not the client's
        NEW.movement_by := (SELECT operator FROM walletctl.events
                            WHERE entry = NEW.entry AND kind = 'begin' LIMIT 1);
        RETURN NEW;
    END IF;
    IF OLD.state <> 'open' OR NEW.state <> 'resolved' THEN
        RAISE EXCEPTION 'walletctl findings: finding % is %: a finding is resolved once',
            OLD.id, OLD.state USING ERRCODE = 'check_violation';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM walletctl.roles WHERE role = session_user
                   AND kind = 'approver')
            AND NOT has_table_privilege(session_user, 'walletctl.policy', 'INSERT') THEN
        RAISE EXCEPTION 'walletctl findings: % is not an approver of this history and may '
            'not resolve findings', session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF session_user = OLD.movement_by THEN
        RAISE EXCEPTION 'walletctl findings: finding % is about %''s own movement (entry '
            '%): another approver resolves it (four eyes)', OLD.id, session_user, OLD.entry
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF coalesce(btrim(NEW.resolution), '') = '' THEN
        RAISE EXCEPTION 'walletctl findings: finding % is resolved with a note', OLD.id
            USING ERRCODE = 'check_violation';
    END IF;
    NEW.resolved_by := session_user;
    NEW.resolved_at := to_char(clock_timestamp() AT TIME ZONE 'UTC',
                               'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
    -- what was found stays as recorded
    NEW.id := OLD.id; NEW.merchant_id := OLD.merchant_id; NEW.store_id := OLD.store_id;
    NEW.kind := OLD.kind; NEW.original := OLD.original; NEW.reference := OLD.reference;
    NEW.entry := OLD.entry; NEW.movement_by := OLD.movement_by; NEW.detail := OLD.detail;
    NEW.recorded_at := OLD.recorded_at; NEW.recorded_by := OLD.recorded_by;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER findings_kept BEFORE INSERT OR UPDATE ON walletctl.findings
    FOR EACH ROW EXECUTE FUNCTION walletctl.findings_kept();

-- each step is an entry of the chain written in the same transaction, by the same role
CREATE FUNCTION walletctl.findings_witnessed() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    step text := CASE WHEN TG_OP = 'INSERT' THEN 'finding' ELSE 'resolve' END;
    n bigint := CASE WHEN TG_OP = 'INSERT' THEN NEW.id ELSE NEW.resolved_entry END;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM walletctl.events e
                   WHERE e.entry = n AND e.kind = 'begin' AND e.operation = step
                   AND e.xmin = pg_current_xact_id()::xid AND e.operator = session_user
                   AND e.new_ref = NEW.reference) THEN
        RAISE EXCEPTION 'walletctl findings: finding % is %d with its entry in the '
            'history (walletctl recon --record / recon resolve)', NEW.id, step
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER findings_witnessed AFTER INSERT OR UPDATE ON walletctl.findings
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION walletctl.findings_witnessed();

REVOKE ALL ON walletctl.findings FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.findings_kept(), walletctl.findings_witnessed() FROM PUBLIC;
DO $do$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT role, kind FROM walletctl.roles LOOP
        EXECUTE format('GRANT SELECT ON walletctl.findings TO %I', r.role);
        IF r.kind IN ('operator', 'approver') THEN
            EXECUTE format('GRANT INSERT ON walletctl.findings TO %I', r.role);
        END IF;
        IF r.kind = 'approver' THEN
            EXECUTE format('GRANT UPDATE (state, resolved_at, resolved_by, resolution, '
                           'resolved_entry) ON walletctl.findings TO %I', r.role);
        END IF;
    END LOOP;
END
$do$;
