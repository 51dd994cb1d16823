
-- Every text a person or a gateway wrote reaches someone's terminal: no control characters
-- (C0, DEL, C1) and no invisible or direction-changing ones (bidi embeddings, overrides and
-- isolates, zero-width marks), in any text column of the history. NOT VALID: rows written
-- before are kept as they are (and shown escaped); every new or changed row is checked.
DO $do$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT table_name AS t, column_name AS col FROM information_schema.columns
             WHERE table_schema = 'walletctl' AND data_type = 'text'
             ORDER BY table_name, ordinal_position LOOP
        EXECUTE format('ALTER TABLE walletctl.%I ADD CONSTRAINT %I CHECK (%I !~ %L) NOT VALID',
                       c.t, left(c.t || '_' || c.col || '_plain', 63), c.col,
                       '[\x01-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]');
    END LOOP;
END
$do$;

-- Every movement passes the rulebook whatever state it arrives in. events_rulebook (V3)
-- checks a movement begun unsent (outcome NULL); so a movement is born only unsent, or
-- refused before sending (no gateway answer), by an operator; a completion settles only a
-- movement begun unsent, is written by an operator, and never turns a refused or declined
-- entry into money moved.
CREATE FUNCTION walletctl.events_settled() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    n record;
    was text;
BEGIN
    FOR n IN SELECT * FROM new_events WHERE kind = 'begin'
             AND (operation IN ('checkout', 'capture', 'refund', 'reverse', 'authorize')
                  OR (amount IS NOT NULL
                      AND operation NOT IN ('policy', 'approval', 'finding', 'resolve')))
             ORDER BY seq LOOP
        IF NOT EXISTS (SELECT 1 FROM walletctl.roles
                       WHERE role = session_user AND kind = 'operator') THEN
            RAISE EXCEPTION 'walletctl policy: % is not an operator of this history and '
                'may not record a movement (entry %)', session_user, n.entry
                USING ERRCODE = 'check_violation';
        END IF;
        IF n.outcome IS NOT NULL AND (n.outcome <> 'refused' OR n.http_status IS NOT NULL) THEN
            RAISE EXCEPTION 'walletctl policy: entry % (% of % % on %) is begun %: a movement '
                'is recorded before it is sent (no outcome yet) or as refused before sending',
                n.entry, n.operation, n.amount, n.currency, n.original_ref, n.outcome
                USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    FOR n IN SELECT c.seq, c.entry, c.outcome, b.outcome AS born, b.operation
             FROM new_events c JOIN walletctl.events b ON b.entry = c.entry AND b.kind = 'begin'
             WHERE c.kind = 'complete'
             AND (b.operation IN ('checkout', 'capture', 'refund', 'reverse', 'authorize')
                  OR (b.amount IS NOT NULL
                      AND b.operation NOT IN ('policy', 'approval', 'finding', 'resolve')))
             ORDER BY c.seq LOOP
        IF NOT EXISTS (SELECT 1 FROM walletctl.roles
                       WHERE role = session_user AND kind = 'operator') THEN
            RAISE EXCEPTION 'walletctl policy: % is not an operator of this history and '
                'may not settle entry %', session_user, n.entry
                USING ERRCODE = 'check_violation';
        END IF;
        IF n.born IS NOT NULL THEN
            RAISE EXCEPTION 'walletctl policy: entry % was recorded % before sending: it '
                'takes no outcome (a movement is begun unsent, checked by the rulebook)',
                n.entry, n.born USING ERRCODE = 'check_violation';
        END IF;
        was := (SELECT e.outcome FROM walletctl.events e WHERE e.entry = n.entry
                AND e.kind = 'complete' AND e.seq < n.seq ORDER BY e.seq DESC LIMIT 1);
        IF was IN ('refused', 'declined') AND n.outcome IS DISTINCT FROM was THEN
            RAISE EXCEPTION 'walletctl policy: entry % is %: its outcome never becomes %',
                n.entry, was, coalesce(n.outcome, 'unknown') USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER events_settled AFTER INSERT ON walletctl.events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_settled();

-- Statements no row trigger sees: TRUNCATE of any table, DELETE of findings, for every role
-- (the owner included: only disabling the trigger, which the owner's maintenance path does
-- deliberately, gets past it).
CREATE FUNCTION walletctl.refuse_statement() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION 'walletctl history: % of walletctl.% refused, for every role (the history '
        'is kept whole)', TG_OP, TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END
$fn$;
DO $do$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
             WHERE s.nspname = 'walletctl' AND c.relkind IN ('r', 'p')
             AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = c.oid
                             AND NOT g.tgisinternal AND (g.tgtype & 32) <> 0) LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON walletctl.%I FOR EACH STATEMENT '
                       'EXECUTE FUNCTION walletctl.refuse_statement()',
                       left(t.relname || '_keep_truncate', 63), t.relname);
    END LOOP;
END
$do$;
CREATE TRIGGER findings_keep BEFORE DELETE ON walletctl.findings
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.refuse_statement();

-- A request's expiry is the database's: its own clock plus the desk's approval_hours. A
-- client may ask for an earlier one (a profile's stricter approval_hours), never a later
-- one. With no approval_hours in the policy, the profile's stands (approvals_guard: at
-- most 30 days).
CREATE FUNCTION walletctl.approvals_expiry() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    hours int := (SELECT value::int FROM walletctl.policy WHERE key = 'approval_hours');
    latest timestamptz := now() + make_interval(hours => hours);
    asked timestamptz;
BEGIN
    IF hours IS NULL THEN
        RETURN NEW;
    END IF;
    BEGIN
        asked := NEW.expires_at::timestamptz;
    EXCEPTION WHEN others THEN
        asked := NULL;
    END;
    NEW.expires_at := to_char(least(coalesce(asked, latest), latest) AT TIME ZONE 'UTC',
                              'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
    RETURN NEW;
END
$fn$;
-- fires after approvals_bound and before approvals_guard (triggers run in name order)
CREATE TRIGGER approvals_expiry BEFORE INSERT ON walletctl.approvals
    FOR EACH ROW EXECUTE FUNCTION walletctl.approvals_expiry();

-- A policy key's currency is an ISO 4217 code one can pay in.
ALTER TABLE walletctl.policy ADD CONSTRAINT policy_key_currency CHECK (
    key !~ '\.[A-Z]{3}$' OR right(key, 3) = ANY (string_to_array(
    'AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD '
    'BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD '
    'EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD '
    'IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL '
    'MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN '
    'PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP '
    'STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED '
    'VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG', ' '))) NOT VALID;

-- recon names a movement above the approval amount that spent no approval ('unapproved')
ALTER TABLE walletctl.findings DROP CONSTRAINT findings_kind_check,
    ADD CONSTRAINT findings_kind_check CHECK (kind IN ('unrecorded', 'absent', 'state',
        'amount', 'type', 'unapproved', 'unknown'));

-- A finding about money moved with no desk entry has no maker on file: another approver
-- than the one who recorded it resolves it (the finding names both).
CREATE FUNCTION walletctl.findings_resolver() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF OLD.movement_by IS NULL AND session_user = OLD.recorded_by THEN
        RAISE EXCEPTION 'walletctl findings: finding % (money moved with no desk entry) was '
            'recorded by %: another approver resolves it (four eyes)', OLD.id, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$fn$;
-- after findings_kept (name order), which has refused all but an approver's resolution
CREATE TRIGGER findings_resolver BEFORE UPDATE ON walletctl.findings
    FOR EACH ROW EXECUTE FUNCTION walletctl.findings_resolver();

REVOKE ALL ON FUNCTION walletctl.events_settled(), walletctl.refuse_statement(),
    walletctl.approvals_expiry(), walletctl.findings_resolver() FROM PUBLIC;
