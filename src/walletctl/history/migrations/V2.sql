
ALTER TABLE walletctl.events ADD COLUMN approval bigint;

CREATE TABLE walletctl.approvals (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('single', 'batch')),
    profile text, base_url text,
    merchant_id text NOT NULL, store_id text NOT NULL, operation text NOT NULL,
    original_ref text, new_ref text, amount text, currency text, reason text,
    batch_file text, batch_sha256 text, batch_rows integer, batch_totals text,
    batch_detail text,
    created_at text NOT NULL, expires_at text NOT NULL,
    requester text NOT NULL DEFAULT session_user, requester_host text,
    request_hash text NOT NULL CHECK (request_hash ~ '^[0-9a-f]{64}$'),
    state text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'approved', 'refused', 'spent')),
    decided_by text, decided_at text, decision_reason text,
    spent_at text, spent_entry bigint, spent_batch text,
    CHECK (state = 'pending' OR decided_by IS NOT NULL),
    CHECK (state <> 'spent' OR (spent_entry IS NULL) <> (spent_batch IS NULL))
);

CREATE FUNCTION walletctl.approvals_guard() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    now_text text := to_char(clock_timestamp() AT TIME ZONE 'UTC',
                             'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.requester IS DISTINCT FROM session_user THEN
            RAISE EXCEPTION 'walletctl approvals: a request is filed by the role that '
                'authenticated (%), not %', session_user, NEW.requester
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF NEW.state <> 'pending' OR NEW.decided_by IS NOT NULL OR NEW.spent_at IS NOT NULL
                OR NEW.spent_entry IS NOT NULL OR NEW.spent_batch IS NOT NULL THEN
            RAISE EXCEPTION 'walletctl approvals: a new request is pending and undecided'
                USING ERRCODE = 'check_violation';
        END IF;
        IF NEW.expires_at::timestamptz <= clock_timestamp()
                OR NEW.expires_at::timestamptz > clock_timestamp() + interval '30 days' THEN
            RAISE EXCEPTION 'walletctl approvals: a request expires within 30 days'
                USING ERRCODE = 'check_violation';
        END IF;
        NEW.created_at := now_text;
        RETURN NEW;
    END IF;
    IF (NEW.id, NEW.kind, NEW.profile, NEW.base_url, NEW.merchant_id, NEW.store_id,
        NEW.operation, NEW.original_ref, NEW.new_ref, NEW.amount, NEW.currency, NEW.reason,
        NEW.batch_file, NEW.batch_sha256, NEW.batch_rows, NEW.batch_totals,
        NEW.batch_detail, NEW.created_at, NEW.expires_at, NEW.requester,
        NEW.requester_host, NEW.request_hash)
       IS DISTINCT FROM
       (OLD.id, OLD.kind, OLD.profile, OLD.base_url, OLD.merchant_id, OLD.store_id,
        OLD.operation, OLD.original_ref, OLD.new_ref, OLD.amount, OLD.currency, OLD.reason,
        OLD.batch_file, OLD.batch_sha256, OLD.batch_rows, OLD.batch_totals,
        OLD.batch_detail, OLD.created_at, OLD.expires_at, OLD.requester,
        OLD.requester_host, OLD.request_hash) THEN
        RAISE EXCEPTION 'walletctl approvals: request #% cannot be changed once filed', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.state = 'pending' AND NEW.state IN ('approved', 'refused') THEN
        IF session_user = OLD.requester THEN
            RAISE EXCEPTION 'walletctl approvals: % filed request #% and may not decide it '
                '(four eyes)', session_user, OLD.id USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF NEW.decided_by IS DISTINCT FROM session_user THEN
            RAISE EXCEPTION 'walletctl approvals: a decision is made by the role that '
                'authenticated (%), not %', session_user, NEW.decided_by
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF NEW.state = 'approved' AND OLD.expires_at::timestamptz <= clock_timestamp() THEN
            RAISE EXCEPTION 'walletctl approvals: request #% expired at %', OLD.id,
                OLD.expires_at USING ERRCODE = 'check_violation';
        END IF;
        IF NEW.spent_at IS NOT NULL OR NEW.spent_entry IS NOT NULL
                OR NEW.spent_batch IS NOT NULL THEN
            RAISE EXCEPTION 'walletctl approvals: a decision spends nothing'
                USING ERRCODE = 'check_violation';
        END IF;
        NEW.decided_at := now_text;
        RETURN NEW;
    END IF;
    IF OLD.state = 'approved' AND NEW.state = 'spent' THEN
        IF session_user IS DISTINCT FROM OLD.requester THEN
            RAISE EXCEPTION 'walletctl approvals: request #% is spent by its requester (%), '
                'not %', OLD.id, OLD.requester, session_user
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF OLD.expires_at::timestamptz <= clock_timestamp() THEN
            RAISE EXCEPTION 'walletctl approvals: request #% expired at %', OLD.id,
                OLD.expires_at USING ERRCODE = 'check_violation';
        END IF;
        IF (NEW.decided_by, NEW.decided_at, NEW.decision_reason)
                IS DISTINCT FROM (OLD.decided_by, OLD.decided_at, OLD.decision_reason) THEN
            RAISE EXCEPTION 'walletctl approvals: the decision on #% cannot be changed', OLD.id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        NEW.spent_at := now_text;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'walletctl approvals: request #% is %; it cannot become %', OLD.id,
        OLD.state, NEW.state USING ERRCODE = 'insufficient_privilege';
END
$fn$;
CREATE TRIGGER approvals_guard BEFORE INSERT OR UPDATE ON walletctl.approvals
    FOR EACH ROW EXECUTE FUNCTION walletctl.approvals_guard();
CREATE TRIGGER approvals_keep BEFORE DELETE ON walletctl.approvals
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_refuse_change();
CREATE TRIGGER approvals_keep_truncate BEFORE TRUNCATE ON walletctl.approvals
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_refuse_change();

CREATE FUNCTION walletctl.events_approval() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    bad bigint;
BEGIN
    SELECT n.seq INTO bad FROM new_events n WHERE n.kind = 'begin'
        AND n.approval IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM walletctl.approvals a WHERE a.id = n.approval AND (
                (n.operation = 'approval' AND a.state IN ('approved', 'refused')
                 AND a.decided_by = n.operator)
                OR (n.outcome IS NOT NULL AND n.operation = a.operation
                    AND a.requester = n.operator)
                OR (a.state = 'spent' AND n.operation = a.operation
                    AND (a.spent_entry = n.entry OR a.spent_batch = n.batch_id))))
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'walletctl history: event % claims an approval it did not spend '
            'or decide', bad USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER events_approval AFTER INSERT ON walletctl.events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_approval();

REVOKE ALL ON walletctl.approvals FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.approvals_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.events_approval() FROM PUBLIC;

-- roles granted before approvals existed get what a grant gives now
DO $do$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT grantee FROM information_schema.role_table_grants
             WHERE table_schema = 'walletctl' AND table_name = 'events'
             AND privilege_type = 'INSERT' AND grantee <> current_user LOOP
        EXECUTE format('GRANT SELECT, INSERT ON walletctl.approvals TO %I', r.grantee);
        EXECUTE format('GRANT UPDATE (state, decided_by, decided_at, decision_reason, '
                       'spent_at, spent_entry, spent_batch) ON walletctl.approvals TO %I',
                       r.grantee);
    END LOOP;
END
$do$;
