
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
