-- The optimistic version column: read the row and its version, write back only if the version is
-- still the one read (UPDATE 1), else someone else won (UPDATE 0) and the caller reads again. A
-- concurrent writer's UPDATE waits for the transaction holding the row, then runs again against
-- the committed row and finds the version changed. Peer b is another session (on another node
-- for raftlock). Compared with PostgreSQL by compat_test.sh.
\set SHOW_CONTEXT never
CREATE TABLE items (id int PRIMARY KEY, value text NOT NULL, version bigint NOT NULL DEFAULT 0);
INSERT INTO items (id, value) VALUES (1, 'a'), (2, 'a');

\echo '--- a write with the version read wins once; a second one with the same version loses'
SELECT value, version FROM items WHERE id = 1;
UPDATE items SET value = 'b', version = version + 1 WHERE id = 1 AND version = 0
    RETURNING value, version;
UPDATE items SET value = 'c', version = version + 1 WHERE id = 1 AND version = 0;
SELECT value, version FROM items WHERE id = 1;
UPDATE items SET value = 'c', version = version + 1 WHERE id = 1 AND version = 1;
UPDATE items SET version = version + 1 WHERE id = 9 AND version = 0;
\echo '--- SET sees the old row: version = version + 1 and value = value in one statement'
UPDATE items SET version = version + 1, value = value WHERE id = 1 RETURNING id, value, version;
UPDATE items SET value = 'd', version = 10 WHERE id = 2 AND version = 0
    RETURNING id, value, version;
UPDATE items SET version = version - 3 WHERE id = 2 AND version <> 0 RETURNING version;
UPDATE items SET version = version + 1 WHERE version >= 3 AND version < 8 RETURNING id, version;

\echo '--- a concurrent writer with the same version waits, then finds the version changed'
\! $PEER open b
BEGIN;
SELECT value, version FROM items WHERE id = 1;
UPDATE items SET value = 'mine', version = version + 1 WHERE id = 1 AND version = 4;
\! $PEER send b "SELECT value, version FROM items WHERE id = 1;"
\! $PEER start b "UPDATE items SET value = 'theirs', version = version + 1 WHERE id = 1 AND version = 4 RETURNING value, version;"
\! $PEER blocked b
COMMIT;
\! $PEER wait b
SELECT value, version FROM items WHERE id = 1;
\echo '--- ... and goes through when the first writer rolls back'
BEGIN;
UPDATE items SET value = 'mine', version = version + 1 WHERE id = 1 AND version = 5;
\! $PEER start b "UPDATE items SET value = 'theirs', version = version + 1 WHERE id = 1 AND version = 5 RETURNING value, version;"
\! $PEER blocked b
ROLLBACK;
\! $PEER wait b
\echo '--- the loser reads again and retries with the new version'
\! $PEER send b "SELECT value, version FROM items WHERE id = 1;"
UPDATE items SET value = 'retry', version = version + 1 WHERE id = 1 AND version = 5;
UPDATE items SET value = 'retry', version = version + 1 WHERE id = 1 AND version = 6
    RETURNING value, version;
\echo '--- a writer in a transaction: its own later statements see its new version'
BEGIN;
UPDATE items SET version = version + 1 WHERE id = 2 AND version = 8;
SELECT version FROM items WHERE id = 2;
UPDATE items SET version = version + 1 WHERE id = 2 AND version = 9 RETURNING version;
\! $PEER send b "SELECT version FROM items WHERE id = 2;"
COMMIT;
\! $PEER send b "SELECT version FROM items WHERE id = 2;"
\! $PEER close b
SELECT id, value, version FROM items ORDER BY id;
DROP TABLE items;
