-- Errors a client can cause, with the message, DETAIL, HINT and position PostgreSQL gives (and,
-- in compat_test.sh's second pass, the SQLSTATE): unique and NOT NULL violations, unknown
-- columns and functions, bad input, syntax errors, and a failed transaction block. Errors whose
-- position or DETAIL differ are in errors_terse.sql (messages only) and divergences.sql.
\set SHOW_CONTEXT never
CREATE TABLE e (id int PRIMARY KEY, name varchar(5) UNIQUE, n bigint NOT NULL DEFAULT 0,
                flag boolean, at timestamptz);
INSERT INTO e (id, name) VALUES (1, 'abc');

\echo '--- constraints'
INSERT INTO e (id, name) VALUES (2, 'abc');
INSERT INTO e (id, name) VALUES (1, 'xyz');
INSERT INTO e (id) VALUES (4), (4);
UPDATE e SET id = 1 WHERE id = 1 RETURNING id;
INSERT INTO e (id) VALUES (5);
UPDATE e SET id = 1 WHERE id = 5;
UPDATE e SET name = 'abc' WHERE id = 5;
INSERT INTO e (id, name) VALUES (6, NULL), (7, NULL) RETURNING id, name IS NULL AS no_name;
SELECT id, name, n FROM e ORDER BY id;

\echo '--- unknown names'
SELECT nosuch FROM e;
SELECT * FROM e WHERE nosuch = 1;
SELECT * FROM e ORDER BY nosuch;
UPDATE e SET nosuch = 1;
UPDATE e SET n = nosuch + 1;
SHOW nosuch_setting;
CREATE TABLE e (x int);
CREATE TABLE IF NOT EXISTS e (x int);
DROP TABLE nosuch;
DROP TABLE IF EXISTS nosuch;

\echo '--- bad input'
INSERT INTO e (id, n) VALUES (8, 'seven');
INSERT INTO e (id, flag) VALUES (8, 'maybe');
INSERT INTO e (id, at) VALUES (8, 'yesterday-ish');
SELECT id FROM e ORDER BY id LIMIT 'x';
SET lock_timeout = 'abc';
INSERT INTO e (id, flag, at) VALUES (8, 'yes', '2024-01-02 03:04:05+00')
    RETURNING id, flag, at;
SELECT CAST('t' AS boolean) AS b, 'on'::boolean, 'off'::boolean, ' 12 '::int, '-7'::bigint;
SELECT '2024-01-02'::timestamptz AS day, '2024-01-02 03:04:05.25+02'::timestamptz AS ts;
INSERT INTO e (id, id) VALUES (9, 9);
UPDATE e SET n = 9223372036854775807 WHERE id = 1;

\echo '--- syntax errors'
SELEC 1;
SELECT 1 2;
SELECT * FROM;
INSERT INTO e (id) VALUES 1;
UPDATE e SET WHERE id = 1;
CREATE TABLE h (x int PRIMARY KEY, y int PRIMARY KEY);

\echo '--- a failed transaction block: 25P02 until ROLLBACK, and COMMIT rolls back'
BEGIN;
INSERT INTO e (id) VALUES (10);
INSERT INTO e (id) VALUES (10);
SELECT 1;
INSERT INTO e (id) VALUES (11);
COMMIT;
SELECT count(*) FROM e WHERE id >= 10;
BEGIN;
SELECT nosuch;
END;
BEGIN;
SELECT pg_advisory_xact_lock(1);
INSERT INTO e (id) VALUES (1);
SELECT pg_advisory_unlock_all();
ROLLBACK;
BEGIN;
BEGIN;
COMMIT;
COMMIT;
ROLLBACK;
ABORT;
END;
DROP TABLE e;
