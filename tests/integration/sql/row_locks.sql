-- SELECT ... FOR UPDATE in a transaction: the rows stay locked until the transaction ends; NOWAIT
-- fails at once, SKIP LOCKED leaves locked rows out (a job queue), lock_timeout bounds a wait, and
-- a statement that waited runs again against the row as the holder left it (READ COMMITTED).
-- Peer b is another session (on another node for raftlock). Compared with PostgreSQL by
-- compat_test.sh.
\set SHOW_CONTEXT never
CREATE TABLE jobs (id int PRIMARY KEY, state text NOT NULL, worker text);
INSERT INTO jobs (id, state) VALUES (1, 'new'), (2, 'new'), (3, 'new'), (4, 'new');
\! $PEER open b

\echo '--- b locks job 1; plain reads do not wait for it'
\! $PEER send b "BEGIN; SELECT id, state FROM jobs WHERE id = 1 FOR UPDATE;"
SELECT id, state FROM jobs ORDER BY id;
SELECT id, state FROM jobs WHERE id = 1;

\echo '--- NOWAIT fails at once and fails the transaction block'
BEGIN;
SELECT id FROM jobs WHERE id = 1 FOR UPDATE NOWAIT;
SELECT id FROM jobs WHERE id = 2;
ROLLBACK;
SELECT id FROM jobs WHERE id = 1 FOR UPDATE NOWAIT;
SELECT id FROM jobs WHERE id = 1 FOR SHARE NOWAIT;
SELECT id FROM jobs WHERE id = 2 FOR UPDATE NOWAIT;

\echo '--- SKIP LOCKED: two workers take different jobs from one queue'
BEGIN;
SELECT id FROM jobs WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;
UPDATE jobs SET state = 'running', worker = 'a' WHERE id = 2 RETURNING id, state, worker;
SELECT id, state FROM jobs WHERE state = 'new' ORDER BY id FOR UPDATE SKIP LOCKED;
\! $PEER send b "SELECT id FROM jobs WHERE state = 'new' ORDER BY id FOR UPDATE SKIP LOCKED;"
\! $PEER send b "SELECT id FROM jobs ORDER BY id DESC LIMIT 2 FOR UPDATE SKIP LOCKED;"
COMMIT;
\! $PEER send b "UPDATE jobs SET state = 'running', worker = 'b' WHERE id = 1; COMMIT;"
SELECT id, state, worker FROM jobs ORDER BY id;

\echo '--- lock_timeout: 55P03 for an UPDATE, a DELETE and a FOR UPDATE that would wait'
\! $PEER send b "BEGIN; SELECT id FROM jobs WHERE id = 3 FOR UPDATE;"
SET lock_timeout = '100ms';
UPDATE jobs SET state = 'x' WHERE id = 3;
DELETE FROM jobs WHERE id = 3;
SELECT id FROM jobs WHERE id = 3 FOR UPDATE;
SELECT id FROM jobs WHERE id >= 3 ORDER BY id FOR UPDATE;
BEGIN;
SELECT id FROM jobs WHERE id = 4 FOR UPDATE;
SELECT id FROM jobs WHERE id = 3 FOR UPDATE;
SELECT id FROM jobs WHERE id = 4;
ROLLBACK;
RESET lock_timeout;
\! $PEER send b "ROLLBACK;"

\echo '--- a waiting UPDATE runs again against the committed row'
BEGIN;
SELECT id, state FROM jobs WHERE id = 3 FOR UPDATE;
\! $PEER start b "UPDATE jobs SET state = 'done' WHERE id = 3 AND state = 'new' RETURNING id, state;"
\! $PEER blocked b
UPDATE jobs SET state = 'taken' WHERE id = 3;
COMMIT;
\! $PEER wait b
\! $PEER start b "UPDATE jobs SET state = 'done' WHERE id = 3 RETURNING id, state;"
\! $PEER wait b

\echo '--- a waiting FOR UPDATE sees the row the holder deleted disappear'
BEGIN;
DELETE FROM jobs WHERE id = 4;
\! $PEER start b "SELECT id, state FROM jobs WHERE id >= 3 ORDER BY id FOR UPDATE;"
\! $PEER blocked b
COMMIT;
\! $PEER wait b

\echo '--- FOR SHARE: shared with other readers, exclusive against writers'
INSERT INTO jobs (id, state) VALUES (5, 'new');
BEGIN;
SELECT id FROM jobs WHERE id = 5 FOR SHARE;
\! $PEER send b "SELECT id FROM jobs WHERE id = 5 FOR SHARE NOWAIT;"
\! $PEER send b "SELECT id FROM jobs WHERE id = 5 FOR UPDATE NOWAIT;"
\! $PEER start b "UPDATE jobs SET state = 'x' WHERE id = 5 RETURNING state;"
\! $PEER blocked b
COMMIT;
\! $PEER wait b
\! $PEER start b "BEGIN; UPDATE jobs SET state = 'shared' WHERE id = 5; SELECT id FROM jobs WHERE id = 5 FOR UPDATE; COMMIT;"
\! $PEER wait b

\echo '--- a transaction''s own locks never make it wait'
BEGIN;
SELECT id FROM jobs WHERE id = 5 FOR SHARE;
SELECT id FROM jobs WHERE id = 5 FOR UPDATE NOWAIT;
UPDATE jobs SET worker = 'a' WHERE id = 5;
SELECT id, worker FROM jobs WHERE id = 5 FOR UPDATE NOWAIT;
COMMIT;
\! $PEER close b
SELECT id, state, worker FROM jobs ORDER BY id;
DROP TABLE jobs;
