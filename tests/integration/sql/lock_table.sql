-- A lock table with a unique key: inserting the row acquires the lock, the primary key makes a
-- second insert of the same name fail (or, with ON CONFLICT DO NOTHING, insert nothing), and
-- deleting the row releases it. Peer b, another session (on another node for raftlock), shows
-- what concurrent acquirers see. Compared with PostgreSQL by compat_test.sh.
\set SHOW_CONTEXT never
CREATE TABLE locks (name text PRIMARY KEY, owner text NOT NULL,
                    version bigint NOT NULL DEFAULT 0, expires_at timestamptz);

\echo '--- acquire: the first insert wins, the second fails or inserts nothing'
INSERT INTO locks (name, owner) VALUES ('job', 'w1');
INSERT INTO locks (name, owner) VALUES ('job', 'w2');
INSERT INTO locks (name, owner) VALUES ('job', 'w2') ON CONFLICT DO NOTHING;
INSERT INTO locks (name, owner) VALUES ('job', 'w2') ON CONFLICT DO NOTHING RETURNING owner;
INSERT INTO locks (name, owner) VALUES ('nightly', 'w2') ON CONFLICT DO NOTHING
    RETURNING name, owner, version;
SELECT name, owner, version, expires_at IS NULL AS no_expiry FROM locks ORDER BY name;
SELECT owner FROM locks WHERE name = 'job';
SELECT count(*) FROM locks WHERE owner = 'w2';

\echo '--- release: only the owner''s delete removes the row'
DELETE FROM locks WHERE name = 'job' AND owner = 'w2' RETURNING name;
DELETE FROM locks WHERE name = 'job' AND owner = 'w1' RETURNING name, owner;
DELETE FROM locks WHERE name = 'job';
INSERT INTO locks (name, owner) VALUES ('job', 'w2') ON CONFLICT DO NOTHING RETURNING owner;

\echo '--- hand over and renew: the version counts the changes of holder'
UPDATE locks SET owner = 'w3', version = version + 1 WHERE name = 'job' AND owner = 'w2'
    RETURNING name, owner, version;
UPDATE locks SET owner = 'w4', version = version + 1 WHERE name = 'job' AND owner = 'w2'
    RETURNING name, owner, version;
UPDATE locks SET expires_at = now() WHERE name = 'nightly';
SELECT name, expires_at IS NOT NULL AS expiring FROM locks ORDER BY name;
UPDATE locks SET expires_at = NULL WHERE name = 'nightly' AND expires_at IS NOT NULL;
SELECT count(*) FROM locks WHERE expires_at IS NULL;

\echo '--- several names in one insert: all or nothing'
INSERT INTO locks (name, owner) VALUES ('a', 'w1'), ('job', 'w1');
SELECT count(*) FROM locks WHERE name = 'a';
INSERT INTO locks (name, owner) VALUES ('a', 'w1'), ('a', 'w2');
INSERT INTO locks (name, owner) VALUES ('a', 'w1'), ('a', 'w2') ON CONFLICT DO NOTHING
    RETURNING name, owner;
INSERT INTO locks (name, owner) VALUES ('b', 'w1'), ('job', 'w1') ON CONFLICT DO NOTHING
    RETURNING name, owner;
UPDATE locks SET name = 'job' WHERE name = 'a';
DELETE FROM locks WHERE owner = 'w1' RETURNING name;

\echo '--- an uncommitted acquire is invisible to others, and a second acquire waits for it'
\! $PEER open b
BEGIN;
INSERT INTO locks (name, owner) VALUES ('tx', 'w1') RETURNING name, owner;
SELECT owner FROM locks WHERE name = 'tx';
\! $PEER send b "SELECT owner FROM locks WHERE name = 'tx';"
\! $PEER start b "INSERT INTO locks (name, owner) VALUES ('tx', 'w2') ON CONFLICT DO NOTHING RETURNING owner;"
\! $PEER blocked b
COMMIT;
\! $PEER wait b
\echo '--- ... and gets it when the first one rolls back'
BEGIN;
INSERT INTO locks (name, owner) VALUES ('tx2', 'w1');
\! $PEER start b "INSERT INTO locks (name, owner) VALUES ('tx2', 'w2') RETURNING owner;"
\! $PEER blocked b
ROLLBACK;
\! $PEER wait b
\echo '--- ... or fails with 23505 when it commits'
BEGIN;
INSERT INTO locks (name, owner) VALUES ('tx3', 'w1');
\! $PEER start b "INSERT INTO locks (name, owner) VALUES ('tx3', 'w2');"
\! $PEER blocked b
COMMIT;
\! $PEER wait b
\echo '--- an uncommitted release makes an acquire wait too'
BEGIN;
DELETE FROM locks WHERE name = 'tx' RETURNING owner;
\! $PEER start b "INSERT INTO locks (name, owner) VALUES ('tx', 'w2') RETURNING owner;"
\! $PEER blocked b
COMMIT;
\! $PEER wait b
\echo '--- lock_timeout bounds the wait'
BEGIN;
INSERT INTO locks (name, owner) VALUES ('tx4', 'w1');
\! $PEER send b "SET lock_timeout = '100ms'; INSERT INTO locks (name, owner) VALUES ('tx4', 'w2');"
\! $PEER send b "INSERT INTO locks (name, owner) VALUES ('tx4', 'w2') ON CONFLICT DO NOTHING;"
\! $PEER send b "RESET lock_timeout;"
COMMIT;
\! $PEER close b
SELECT name, owner, version FROM locks ORDER BY name;
DROP TABLE locks;
