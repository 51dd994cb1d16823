"""The shared history's schema on PostgreSQL: versioned migrations, the triggers that keep
the audit trail append-only and one chain, and the grants an operator role needs.

``walletctl history setup`` (run by the database owner: ``setup`` in ``history/postgres.py``)
applies what is missing, in one transaction under a lock, so running it twice, or from two
machines at once, is harmless. Each grant gives SELECT and INSERT on the events (and
nothing on anything else): operators read and append, never change.

What the database enforces, whatever client writes:

* ``events`` is append-only: UPDATE, DELETE and TRUNCATE are refused by a trigger, for the
  owner too. Operators are granted SELECT and INSERT only. The maintenance path (pruning a
  restored copy, say) is the owner's, visible and deliberate: ``ALTER TABLE walletctl.events
  DISABLE TRIGGER events_append_only`` in a transaction that enables it again.
* every event's ``operator`` is the role PostgreSQL authenticated (``session_user``), not a
  name the client claims: an insert naming anyone else is refused.
* events extend ONE chain: each must be the next number after the tip and name the tip's
  hash as its predecessor, checked under the chain's lock (an advisory lock every writer
  takes), so concurrent operators cannot fork or interleave it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:

    pass

SCHEMA_NAME = "walletctl"
CHAIN_LOCK = 0x77616C6C  # "wall": pg_advisory_xact_lock(CHAIN_LOCK, 0) guards the tip
SETUP_LOCK = 0x77616C6D

_V1 = """
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
    PERFORM pg_advisory_xact_lock(@CHAIN_LOCK@, 0);
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
"""

_V1 = _V1.replace("@CHAIN_LOCK@", str(CHAIN_LOCK))

# Four eyes. The rules of history/approvals.py, kept by the database against the roles it
# authenticated: a request is filed by session_user and is pending; only another role
# approves or refuses it, before its expiry; only its requester spends it, once, before
# its expiry; nothing else ever changes (and nothing is deleted). An event that claims an
# approval must be the movement (or batch) that spent it, or the decision its decider made.
_V2 = r"""
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
"""

# The desk's rulebook, roles, batch rows bound one by one, request hashes and entry numbers
# computed by the database. What a client (or psql) writes is checked here, against the
# roles the server authenticated and the rulebook only the owner may change.
_V3 = r"""
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
        '|limits\.(@OPS@))(\.[A-Z]{3})?|require_reason|duplicate_window|approval_hours)$')),
    value text NOT NULL CHECK (CASE
        WHEN key ~ '^(approvals|limits)\.' THEN value ~ '^[0-9]{1,12}(\.[0-9]{1,4})?$'
            AND value::numeric > 0
        WHEN key = 'require_reason' THEN value ~ '^(true|(@OPS@)(,(@OPS@))*)$'
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
             AND operation IN (@OPS_LIST@) ORDER BY seq LOOP
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
"""
_OPS = ("checkout", "capture", "refund", "reverse", "authorize")
_V3 = (_V3.replace("@OPS@", "|".join(_OPS))
       .replace("@OPS_LIST@", ", ".join(f"'{op}'" for op in _OPS)))

# Every look-up a command makes answered from an index, whatever the history's size
# (tests/pg/test_plans.py asserts the plans, the triggers' own statements included): the
# begun-at time, the writer and the approval an event names; and each entry's outcome now
# with its latest completion (entry_outcome), derived from the events by a trigger in the
# same statement as each append, so that unknown entries, or an entry's latest outcome,
# are found without walking every entry. The time and writer indexes are not partial
# (``WHERE kind = 'begin'``): an index of every begin lets the planner walk all of them as
# a cheap way to the begins (the duplicate check of 500 references did, at 60k entries).
# Nobody writes entry_outcome but that trigger
# (the owner's function); every role reads it. The owner's maintenance path (an UPDATE or
# DELETE with events_append_only disabled) recomputes the entries it touches.
_V4 = r"""
CREATE INDEX events_time ON walletctl.events (time);
CREATE INDEX events_written_by ON walletctl.events ((COALESCE(operator, os_user)));
CREATE INDEX events_approval_id ON walletctl.events (approval) WHERE approval IS NOT NULL;

CREATE TABLE walletctl.entry_outcome (
    entry bigint PRIMARY KEY,
    outcome text NOT NULL,
    last_complete bigint
);
CREATE INDEX entry_outcome_by_outcome ON walletctl.entry_outcome (outcome, entry);
INSERT INTO walletctl.entry_outcome (entry, outcome, last_complete)
    SELECT b.entry, coalesce(c.outcome, b.outcome, 'unknown'), c.seq
    FROM walletctl.events b LEFT JOIN (
        SELECT DISTINCT ON (entry) entry, seq, outcome FROM walletctl.events
        WHERE kind = 'complete' ORDER BY entry, seq DESC) c ON c.entry = b.entry
    WHERE b.kind = 'begin';

CREATE FUNCTION walletctl.events_outcomes() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = walletctl, pg_temp AS $fn$
DECLARE
    touched bigint[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO walletctl.entry_outcome (entry, outcome, last_complete)
            SELECT n.entry, coalesce(n.outcome, 'unknown'), NULL FROM added n
            WHERE n.kind = 'begin';
        UPDATE walletctl.entry_outcome s
            SET last_complete = x.seq, outcome = coalesce(x.outcome, b.outcome, 'unknown')
            FROM (SELECT DISTINCT ON (entry) entry, seq, outcome FROM added
                  WHERE kind = 'complete' ORDER BY entry, seq DESC) x
            JOIN walletctl.events b ON b.entry = x.entry AND b.kind = 'begin'
            WHERE s.entry = x.entry AND (s.last_complete IS NULL OR s.last_complete < x.seq);
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        SELECT array_agg(entry) INTO touched FROM (
            SELECT entry FROM gone UNION SELECT entry FROM added) t;
    ELSE
        SELECT array_agg(DISTINCT entry) INTO touched FROM gone;
    END IF;
    DELETE FROM walletctl.entry_outcome WHERE entry = ANY (touched);
    INSERT INTO walletctl.entry_outcome (entry, outcome, last_complete)
        SELECT DISTINCT ON (b.entry) b.entry, coalesce(c.outcome, b.outcome, 'unknown'), c.seq
        FROM walletctl.events b LEFT JOIN LATERAL (
            SELECT seq, outcome FROM walletctl.events
            WHERE entry = b.entry AND kind = 'complete' ORDER BY seq DESC LIMIT 1) c ON true
        WHERE b.kind = 'begin' AND b.entry = ANY (touched)
        ORDER BY b.entry, b.seq;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER events_outcomes AFTER INSERT ON walletctl.events
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_outcomes();
CREATE TRIGGER events_outcomes_changed AFTER UPDATE ON walletctl.events
    REFERENCING OLD TABLE AS gone NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_outcomes();
CREATE TRIGGER events_outcomes_deleted AFTER DELETE ON walletctl.events
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_outcomes();

REVOKE ALL ON walletctl.entry_outcome FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.events_outcomes() FROM PUBLIC;

-- roles granted before: read the entries' outcomes
DO $do$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT role FROM walletctl.roles LOOP
        EXECUTE format('GRANT SELECT ON walletctl.entry_outcome TO %I', r.role);
    END LOOP;
END
$do$;
"""

# Recon's findings (history/findings.py): recorded by an operator or approver with their
# entry in the chain; resolved once, by an approver or the owner who did not make the
# movement the finding is about, with a note and its own entry, in the same transaction.
_V5 = r"""
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
"""

# (version, what it does, its SQL). Append only: a released migration is never edited.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "events, append-only and one chain", _V1),
    (2, "approvals (four eyes), kept by the database", _V2),
    (3, "the desk's rulebook, roles, bound batch rows, entries numbered by the database",
     _V3),
    (4, "indexes for every look-up; each entry's outcome kept beside the events", _V4),
    (5, "recon's findings, recorded and resolved with their entries in the chain", _V5),
)
LATEST = MIGRATIONS[-1][0]

# What each kind of role is granted, and no more. Every kind reads the history; operators
# append and file and spend requests, approvers append (their decisions) and decide,
# auditors only read. The triggers check the kind again for each write (walletctl.roles).
_READ = (
    "GRANT USAGE ON SCHEMA walletctl TO {role}",
    "GRANT SELECT ON walletctl.events, walletctl.schema_version, walletctl.approvals, "
    "walletctl.approval_rows, walletctl.policy, walletctl.roles, walletctl.entry_outcome, "
    "walletctl.findings TO {role}",
)
GRANTS: dict[str, tuple[str, ...]] = {
    "operator": (*_READ,
                 "GRANT INSERT ON walletctl.events, walletctl.approvals, "
                 "walletctl.approval_rows TO {role}",
                 "GRANT UPDATE (state, spent_at, spent_entry, spent_batch) "
                 "ON walletctl.approvals TO {role}",
                 "GRANT INSERT ON walletctl.findings TO {role}"),
    "approver": (*_READ,
                 "GRANT INSERT ON walletctl.events TO {role}",
                 "GRANT UPDATE (state, decided_by, decided_at, decision_reason) "
                 "ON walletctl.approvals TO {role}",
                 "GRANT INSERT ON walletctl.findings TO {role}",
                 "GRANT UPDATE (state, resolved_at, resolved_by, resolution, resolved_entry)"
                 " ON walletctl.findings TO {role}"),
    "auditor": _READ,
}
ROLE_KINDS: tuple[str, ...] = tuple(GRANTS)
