-- Errors whose message and SQLSTATE are PostgreSQL's but whose position (LINE and caret) or
-- DETAIL is not: compat_test.sh compares them with psql's VERBOSITY terse (the message alone)
-- and sqlstate. The differences themselves are shown by divergences.sql.
\set SHOW_CONTEXT never
CREATE TABLE e (id int PRIMARY KEY, name varchar(5) UNIQUE, n bigint NOT NULL DEFAULT 0);
INSERT INTO e (id, name) VALUES (1, 'abc');

\echo '--- unknown relations and columns (PostgreSQL gives a position)'
SELECT * FROM nosuch;
SELECT count(*) FROM nosuch WHERE id = 1;
INSERT INTO nosuch VALUES (1);
UPDATE nosuch SET id = 1;
DELETE FROM nosuch;
SELECT id FROM nosuch FOR UPDATE;
INSERT INTO e (id, nosuch) VALUES (2, 1);

\echo '--- bad input (PostgreSQL points at the literal)'
SELECT 'abc'::int;
SELECT CAST('x1' AS bigint);
SELECT * FROM e WHERE id = 'abc';
SELECT pg_advisory_lock('x');
SELECT pg_try_advisory_lock(1, 'y');
INSERT INTO e VALUES (9, 'a', 1, 'extra');

\echo '--- out of range and too long (PostgreSQL gives no position)'
INSERT INTO e (id, name) VALUES (2147483648, 'x');
INSERT INTO e (id, name) VALUES (2, 'abcdef');
UPDATE e SET name = 'abcdefgh' WHERE id = 1;
SELECT 2147483647 + 1;
SELECT 9223372036854775807 + 1;
SELECT -9223372036854775807 - 2;
UPDATE e SET n = 9223372036854775807 WHERE id = 1;
UPDATE e SET n = n + 1 WHERE id = 1;
SELECT id FROM e LIMIT -1;
CREATE TABLE f (x int, x int);

\echo '--- a NOT NULL column left out (PostgreSQL adds DETAIL: Failing row contains ...)'
CREATE TABLE nn (id int PRIMARY KEY, owner text NOT NULL);
INSERT INTO nn (id) VALUES (1);
INSERT INTO nn (owner) VALUES ('w');
DROP TABLE nn;
DROP TABLE e;

\echo '--- an error found before the log (syntax, a bad setting) fails the block like any other'
CREATE TABLE fb (id int PRIMARY KEY);
BEGIN;
INSERT INTO fb VALUES (1);
SELEC 1;
INSERT INTO fb VALUES (2);
COMMIT;
BEGIN;
INSERT INTO fb VALUES (5);
SET lock_timeout = 'abc';
SHOW lock_timeout;
INSERT INTO fb VALUES (6);
COMMIT;
SELECT id FROM fb ORDER BY id;
DROP TABLE fb;
