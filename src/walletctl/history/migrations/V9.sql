
-- The rulebook's and the settling rules' statement triggers (V3 events_rulebook, V6
-- events_settled) walked every movement of a statement in PL/pgSQL, a few look-ups per row
-- (the writer's role, each rule of the policy, the entry's earlier completion), though a
-- row that breaks no rule does nothing in the loop. Now one set-based query over the
-- statement's rows picks the rows that may break a rule (a superset of those that do: the
-- writer is no operator, the amount is not one, a rule of the policy reaches the movement,
-- a born outcome, an earlier refused or declined completion), in the same order, and the
-- loop runs the same checks as before on those rows only: every rule, its message and
-- the row it names are as they were; a statement of plain movements costs one query.

CREATE OR REPLACE FUNCTION walletctl.events_rulebook() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    n record;
    a record;
    moved numeric;
    rule text;
    what text;
    covered bigint;
    used bigint;
    is_operator boolean := EXISTS (SELECT 1 FROM walletctl.roles
                                WHERE role = session_user AND kind = 'operator');
    needs_reason text := (SELECT value FROM walletctl.policy WHERE key = 'require_reason');
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
    -- the rows the loop below may refuse: the others pass each of its checks
    FOR n IN SELECT * FROM new_events e WHERE e.kind = 'begin' AND e.outcome IS NULL
             AND e.operation IN ('checkout', 'capture', 'refund', 'reverse', 'authorize')
             AND (NOT is_operator OR CASE
                 WHEN e.amount IS NULL OR e.amount !~ '^[0-9]{1,15}(\.[0-9]{1,4})?$' THEN true
                 ELSE (coalesce(btrim(e.reason), '') = '' AND (
                           (needs_reason = 'true'
                            OR e.operation = ANY(string_to_array(needs_reason, ',')))
                           OR e.amount::numeric > coalesce(
                               (SELECT value FROM walletctl.policy WHERE key =
                                'limits.' || e.operation || '.' || e.currency),
                               (SELECT value FROM walletctl.policy
                                WHERE key = 'limits.' || e.operation))::numeric))
                      OR e.amount::numeric > coalesce(
                          (SELECT value FROM walletctl.policy WHERE key =
                           'approvals.' || e.operation || '.' || e.currency),
                          (SELECT value FROM walletctl.policy
                           WHERE key = 'approvals.' || e.operation))::numeric
                 END)
             ORDER BY e.seq LOOP
        IF NOT is_operator THEN
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
        rule := needs_reason;
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

CREATE OR REPLACE FUNCTION walletctl.events_settled() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    n record;
    was text;
    is_operator boolean := EXISTS (SELECT 1 FROM walletctl.roles
                                WHERE role = session_user AND kind = 'operator');
BEGIN
    FOR n IN SELECT * FROM new_events WHERE kind = 'begin'
             AND (operation IN ('checkout', 'capture', 'refund', 'reverse', 'authorize')
                  OR (amount IS NOT NULL
                      AND operation NOT IN ('policy', 'approval', 'finding', 'resolve')))
             AND (NOT is_operator OR (outcome IS NOT NULL
                                   AND (outcome <> 'refused' OR http_status IS NOT NULL)))
             ORDER BY seq LOOP
        IF NOT is_operator THEN
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
             AND (NOT is_operator OR b.outcome IS NOT NULL OR EXISTS (
                 SELECT 1 FROM walletctl.events e WHERE e.entry = c.entry
                 AND e.kind = 'complete' AND e.seq < c.seq
                 AND e.outcome IN ('refused', 'declined')))
             ORDER BY c.seq LOOP
        IF NOT is_operator THEN
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
