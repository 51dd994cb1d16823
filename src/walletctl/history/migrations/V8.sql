
-- The history's Merkle tree (RFC 9162): one row per complete subtree of the events' leaves
-- (leaf seq - 1 is the hash of event seq's canonical form), written by the client under
-- the chain's lock with the events that complete it, never changed. The leaves of events
-- written before this version are added by `walletctl history setup` (walletctl.history.tree).
CREATE TABLE walletctl.merkle_nodes (
    level smallint NOT NULL CHECK (level BETWEEN 0 AND 62),
    idx bigint NOT NULL CHECK (idx >= 0),
    hash bytea NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, idx)
);

-- Nodes are written under the chain's lock, and only over events already in the chain:
-- nobody can write a node for an event to come (and so block or bend its leaf).
CREATE FUNCTION walletctl.merkle_nodes_extend() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    tip bigint;
    bad record;
BEGIN
    PERFORM pg_advisory_xact_lock(2002873452, 0);
    SELECT coalesce(max(seq), 0) INTO tip FROM walletctl.events;
    SELECT n.level, n.idx INTO bad FROM new_nodes n
        WHERE ((n.idx + 1) << n.level) > tip LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'walletctl history: Merkle node (%, %) covers events not in the chain',
            bad.level, bad.idx USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER merkle_nodes_extend AFTER INSERT ON walletctl.merkle_nodes
    REFERENCING NEW TABLE AS new_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.merkle_nodes_extend();
CREATE TRIGGER merkle_nodes_append_only BEFORE UPDATE OR DELETE ON walletctl.merkle_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_refuse_change();
CREATE TRIGGER merkle_nodes_append_only_truncate BEFORE TRUNCATE ON walletctl.merkle_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION walletctl.events_refuse_change();

REVOKE ALL ON walletctl.merkle_nodes FROM PUBLIC;
REVOKE ALL ON FUNCTION walletctl.merkle_nodes_extend() FROM PUBLIC;

-- the roles granted before: every kind reads the tree, those who append events append to it
DO $do$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT g.role, g.kind FROM walletctl.roles g
             JOIN pg_roles p ON p.rolname = g.role LOOP
        EXECUTE format('GRANT SELECT ON walletctl.merkle_nodes TO %I', r.role);
        IF r.kind IN ('operator', 'approver') THEN
            EXECUTE format('GRANT INSERT ON walletctl.merkle_nodes TO %I', r.role);
        END IF;
    END LOOP;
END
$do$;
