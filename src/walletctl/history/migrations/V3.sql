
CREATE TABLE walletctl.roles (
    role text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('operator', 'approver', 'auditor')),
    granted_by text NOT NULL DEFAULT session_user,
    granted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (role, kind)
);
-- roles granted before there were kinds could do both: they keep what they had
INSERT INTO walletctl.roles (role, kind)
    SELECT DISTINCT g.grantee, k.kind FROM information_schema.role_table_grants g,
        (VALUES ('operator'), ('approver')) AS k(kind)
    WHERE g.table_schema = 'walletctl' AND g.table_name = 'events'
    AND g.privilege_type = 'INSERT' AND g.grantee <> current_user;

CREATE TABLE walletctl.policy (
    key text PRIMARY KEY CHECK (key ~ ('^((approvals\.(capture|refund|reverse)'
        '|limits\.(checkout|capture|refund|reverse|authorize))(\.[A-Z]{3})?|require_reason|duplicate_window|approval_hours)$')),
    value text NOT NULL CHECK (CASE
        WHEN key ~ '^(approvals|limits)\.' THEN value ~ '^[0-9]{1,12}(\.[0-9]{1,4})?$'
            AND value::numeric > 0
        WHEN key = 'require_reason' THEN value ~ '^(true|(checkout|capture|refund|reverse|authorize)(,(checkout|capture|refund|reverse|authorize))*)$'
        WHEN key = 'duplicate_window' THEN value ~ '^[0-9]{1,4}$' AND value::int <= 1440
        ELSE value ~ '^[0-9]{1,3}$' AND value::int BETWEEN 1 AND 720 END),
    set_by text NOT NULL DEFAULT session_user,
    set_at text NOT NULL DEFAULT ''
);

CREATE FUNCTION walletctl.policy_stamp() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    NEW.set_by := session_user;
    NEW.set_at := to_char(clock_timestamp() AT TIME ZONE 'UTC',
                          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
    RETURN NEW;
END
$fn$;
CREATE TRIGGER policy_stamp BEFORE INSERT OR UPDATE ON walletctl.policy
    FOR EACH ROW EXECUTE FUNCTION walletctl.policy_stamp();

-- every change of the rulebook is an entry of the chain, written in the same transaction
CREATE FUNCTION walletctl.policy_witnessed() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    k text := CASE WHEN TG_OP = 'DELETE' THEN OLD.key ELSE NEW.key END;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM walletctl.events e
                   WHERE e.seq > (SELECT max(seq) FROM walletctl.events) - 1000
                   AND e.xmin = pg_current_xact_id()::xid AND e.operation = 'policy'
                   AND e.original_ref = k) THEN
        RAISE EXCEPTION 'walletctl policy: a change of % is written with its entry in the '
            'history (walletctl history policy set)', k USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER policy_witnessed AFTER INSERT OR UPDATE OR DELETE
    ON walletctl.policy DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION walletctl.policy_witnessed();

CREATE TABLE walletctl.approval_rows (
    approval bigint NOT NULL REFERENCES walletctl.approvals (id),
    line integer NOT NULL,
    ref text NOT NULL,
    amount text NOT NULL CHECK (amount ~ '^[0-9]{1,15}(\.[0-9]{1,4})?$'),
    currency text NOT NULL,
    PRIMARY KEY (approval, line)
);
CREATE INDEX approval_rows_ref ON walletctl.approval_rows (approval, ref);
CREATE INDEX approvals_ref ON walletctl.approvals (original_ref);

-- a batch request's rows are filed with it, by its requester, and never change
CREATE FUNCTION walletctl.approval_rows_filed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM walletctl.approvals a WHERE a.id = NEW.approval
                   AND a.kind = 'batch' AND a.requester = session_user
                   AND a.state = 'pending' AND a.xmin = pg_current_xact_id()::xid) THEN
        RAISE EXCEPTION 'walletctl approvals: the rows of batch request #% are filed with '
            'it, by its requester, in the same transaction', NEW.approval
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER approval_rows_filed BEFORE INSERT ON walletctl.approval_rows
    FOR EACH ROW EXECUTE FUNCTION walletctl.approval_rows_filed();
CREATE TRIGGER approval_rows_keep BEFORE UPDATE OR DELETE ON walletctl.approval_rows
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_refuse_change();
CREATE TRIGGER approval_rows_keep_truncate BEFORE TRUNCATE ON walletctl.approval_rows
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_refuse_change();

-- filed by an operator; its hash computed here, from the stored fields (what the approver
-- is shown is what is bound); a batch's detail is its bound rows, never the requester's text
CREATE FUNCTION walletctl.approvals_bound() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM walletctl.roles
                   WHERE role = session_user AND kind = 'operator') THEN
        RAISE EXCEPTION 'walletctl approvals: % is not an operator of this history and may '
            'not file requests', session_user USING ERRCODE = 'insufficient_privilege';
    END IF;
    NEW.request_hash := encode(sha256(convert_to(json_build_array(
        NEW.kind, NEW.merchant_id, NEW.store_id, NEW.operation, NEW.original_ref,
        NEW.new_ref, NEW.amount, NEW.currency, NEW.reason, NEW.batch_sha256)::text,
        'UTF8')), 'hex');
    NEW.batch_detail := NULL;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER approvals_bound BEFORE INSERT ON walletctl.approvals
    FOR EACH ROW EXECUTE FUNCTION walletctl.approvals_bound();

-- approvers decide; operators spend (their own: approvals_guard)
CREATE FUNCTION walletctl.approvals_roles() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    needed text := CASE WHEN NEW.state IN ('approved', 'refused') THEN 'approver'
                        ELSE 'operator' END;
BEGIN
    IF NEW.state IS DISTINCT FROM OLD.state AND NOT EXISTS (
            SELECT 1 FROM walletctl.roles WHERE role = session_user AND kind = needed) THEN
        RAISE EXCEPTION 'walletctl approvals: % is not an % of this history', session_user,
            needed USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER approvals_roles BEFORE UPDATE ON walletctl.approvals
    FOR EACH ROW EXECUTE FUNCTION walletctl.approvals_roles();

-- entries are numbered by the chain: each new entry is the last one's number + 1
CREATE FUNCTION walletctl.events_numbered() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    first bigint;
    last bigint;
    bad bigint;
BEGIN
    SELECT min(seq) INTO first FROM new_events;
    SELECT coalesce((SELECT e.entry FROM walletctl.events e WHERE e.seq < first
                     AND e.kind = 'begin' ORDER BY e.seq DESC LIMIT 1), 0) INTO last;
    SELECT n.seq INTO bad FROM (SELECT seq, entry, row_number() OVER (ORDER BY seq) AS k
                                FROM new_events WHERE kind = 'begin') n
        WHERE n.entry <> last + n.k ORDER BY n.seq LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'walletctl history: event % is not the next entry (the last '
            'entry''s number + 1)', bad USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER events_numbered AFTER INSERT ON walletctl.events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_numbered();

-- every movement against the rulebook, as its intent is recorded: who may move money, a
-- reason where one is required or above a limit, and above the approval amount an approval
-- spent for exactly this movement (or a batch row it binds), compared field by field here
CREATE FUNCTION walletctl.events_rulebook() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    n record;
    a record;
    moved numeric;
    rule text;
    what text;
    covered bigint;
    used bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM new_events WHERE kind = 'begin' AND operation = 'approval')
            AND NOT EXISTS (SELECT 1 FROM walletctl.roles
                            WHERE role = session_user AND kind = 'approver') THEN
        RAISE EXCEPTION 'walletctl policy: % is not an approver of this history',
            session_user USING ERRCODE = 'check_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM new_events WHERE kind = 'begin' AND operation = 'policy')
            AND NOT has_table_privilege(session_user, 'walletctl.policy', 'INSERT') THEN
        RAISE EXCEPTION 'walletctl policy: only the owner changes the desk''s policy'
            USING ERRCODE = 'check_violation';
    END IF;
    FOR n IN SELECT * FROM new_events WHERE kind = 'begin' AND outcome IS NULL
             AND operation IN ('checkout', 'capture', 'refund', 'reverse', 'authorize') ORDER BY seq LOOP
        IF NOT EXISTS (SELECT 1 FROM walletctl.roles
                       WHERE role = session_user AND kind = 'operator') THEN
            RAISE EXCEPTION 'walletctl policy: % is not an operator of this history and '
                'may not move money', session_user USING ERRCODE = 'check_violation';
        END IF;
        IF n.amount IS NULL OR n.amount !~ '^[0-9]{1,15}(\.[0-9]{1,4})?$' THEN
            RAISE EXCEPTION 'walletctl policy: entry % has no amount', n.entry
                USING ERRCODE = 'check_violation';
        END IF;
        moved := n.amount::numeric;
        what := format('%s of %s %s on %s', n.operation, n.amount, n.currency,
                       n.original_ref);
        rule := (SELECT value FROM walletctl.policy WHERE key = 'require_reason');
        IF rule IS NOT NULL AND (rule = 'true' OR n.operation = ANY(string_to_array(rule, ',')))
                AND coalesce(btrim(n.reason), '') = '' THEN
            RAISE EXCEPTION 'walletctl policy: % needs a reason (require_reason)', what
                USING ERRCODE = 'check_violation';
        END IF;
        rule := coalesce(
            (SELECT value FROM walletctl.policy
             WHERE key = 'limits.' || n.operation || '.' || n.currency),
            (SELECT value FROM walletctl.policy WHERE key = 'limits.' || n.operation));
        IF rule IS NOT NULL AND moved > rule::numeric AND coalesce(btrim(n.reason), '') = ''
                THEN
            RAISE EXCEPTION 'walletctl policy: % is above the desk''s limit of % and needs '
                'a reason', what, rule USING ERRCODE = 'check_violation';
        END IF;
        rule := coalesce(
            (SELECT value FROM walletctl.policy
             WHERE key = 'approvals.' || n.operation || '.' || n.currency),
            (SELECT value FROM walletctl.policy WHERE key = 'approvals.' || n.operation));
        CONTINUE WHEN rule IS NULL OR moved <= rule::numeric;
        what := format('%s is above the desk''s approval amount of %s', what, rule);
        SELECT * INTO a FROM walletctl.approvals WHERE id = n.approval;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'walletctl policy: % and names no approval', what
                USING ERRCODE = 'check_violation';
        END IF;
        IF a.state <> 'spent' OR (a.merchant_id, a.store_id, a.operation)
                IS DISTINCT FROM (n.merchant_id, n.store_id, n.operation) THEN
            RAISE EXCEPTION 'walletctl policy: %: approval #% was not spent for it', what,
                a.id USING ERRCODE = 'check_violation';
        END IF;
        IF a.kind = 'single' THEN
            IF a.spent_entry IS DISTINCT FROM n.entry
                    OR (a.original_ref, a.new_ref, a.currency, a.reason)
                       IS DISTINCT FROM (n.original_ref, n.new_ref, n.currency, n.reason)
                    OR a.amount !~ '^[0-9]{1,15}(\.[0-9]{1,4})?$'
                    OR a.amount::numeric <> moved THEN
                RAISE EXCEPTION 'walletctl policy: %: approval #% approved another movement '
                    '(% of % % on %)', what, a.id, a.operation, a.amount, a.currency,
                    a.original_ref USING ERRCODE = 'check_violation';
            END IF;
            CONTINUE;
        END IF;
        IF a.spent_batch IS DISTINCT FROM n.batch_id THEN
            RAISE EXCEPTION 'walletctl policy: %: approval #% was spent by another batch',
                what, a.id USING ERRCODE = 'check_violation';
        END IF;
        IF a.expires_at::timestamptz <= clock_timestamp() THEN
            RAISE EXCEPTION 'walletctl policy: %: approval #% expired at %', what, a.id,
                a.expires_at USING ERRCODE = 'check_violation';
        END IF;
        SELECT count(*) INTO covered FROM walletctl.approval_rows r
            WHERE r.approval = a.id AND r.ref = n.original_ref
            AND r.amount::numeric = moved AND r.currency = n.currency;
        SELECT count(*) INTO used FROM walletctl.events e
            WHERE e.original_ref = n.original_ref AND e.kind = 'begin' AND e.approval = a.id
            AND e.amount = n.amount AND e.currency = n.currency AND e.seq <= n.seq;
        IF used > covered THEN
            RAISE EXCEPTION 'walletctl policy: %: approval #% does not cover this row', what,
                a.id USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER events_rulebook AFTER INSERT ON walletctl.events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_rulebook();

REVOKE ALL ON walletctl.roles, walletctl.policy, walletctl.approval_rows FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.policy_stamp(), walletctl.policy_witnessed(),
    walletctl.approval_rows_filed(), walletctl.approvals_bound(), walletctl.approvals_roles(),
    walletctl.events_numbered(), walletctl.events_rulebook() FROM PUBLIC;

-- roles granted before: read the rulebook, roles and bound rows; file rows with requests
DO $do$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT role FROM walletctl.roles LOOP
        EXECUTE format('GRANT SELECT ON walletctl.roles, walletctl.policy TO %I', r.role);
        EXECUTE format('GRANT SELECT, INSERT ON walletctl.approval_rows TO %I', r.role);
    END LOOP;
END
$do$;
