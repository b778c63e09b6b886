-- What raftlock does differently from PostgreSQL by design (docs/sql-mode.md, "Differences from
-- PostgreSQL" and "Supported SQL"), checked against raftlock_only.expected: its version string,
-- DDL outside transactions, a multi-statement Query that is not one implicit transaction, DROP
-- TABLE refused while a transaction has uncommitted writes in it, and SQL outside the subset
-- refused with 0A000 rather than misread. Peer b is another session on another node.
\set SHOW_CONTEXT never
SELECT version();
SHOW server_version;
SHOW transaction_isolation;

\echo '--- DDL takes effect at once, also inside a transaction that rolls back'
BEGIN;
CREATE TABLE ddl (id int PRIMARY KEY);
ROLLBACK;
SELECT count(*) FROM ddl;
BEGIN;
DROP TABLE ddl;
ROLLBACK;
SELECT count(*) FROM ddl;

\echo '--- a multi-statement Query runs its statements one by one: the first error stops the rest'
CREATE TABLE m (id int PRIMARY KEY, v text);
INSERT INTO m VALUES (1, 'a') \; SELECT nosuch \; INSERT INTO m VALUES (2, 'b');
SELECT id, v FROM m ORDER BY id;

\echo '--- DROP TABLE waits for no one: refused (55006) while a transaction has writes in it'
\! $PEER open b
\! $PEER send b "BEGIN; INSERT INTO m VALUES (3, 'c');"
DROP TABLE m;
\! $PEER send b "COMMIT;"
\! $PEER close b
SELECT id, v FROM m ORDER BY id;
DROP TABLE m;

\echo '--- isolation levels other than READ COMMITTED are refused'
BEGIN ISOLATION LEVEL SERIALIZABLE;
BEGIN ISOLATION LEVEL REPEATABLE READ;
BEGIN ISOLATION LEVEL READ COMMITTED;
COMMIT;
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;

\echo '--- SQL outside the subset: 0A000, naming the feature'
CREATE TABLE s (id int PRIMARY KEY, v text);
SELECT id FROM s WHERE id = 1 OR id = 2;
SELECT id FROM s WHERE id IN (1, 2);
SELECT id FROM s WHERE v LIKE 'a%';
SELECT id FROM s WHERE NOT id = 1;
SELECT a.id FROM s a, s b;
SELECT id FROM s WHERE id = (SELECT 1);
SELECT v, count(*) FROM s GROUP BY v;
SELECT max(id) FROM s;
SELECT id * 2, id / 2 FROM s;
SELECT 'a' || 'b';
SELECT E'x';
SELECT $$x$$;
SELECT 1.5;
SELECT +3;
CREATE TABLE n (x numeric);
SELECT pg_cancel_backend(1);
LISTEN channel;
COPY s FROM STDIN;
DROP TABLE s;

\echo '--- now() is the transaction''s start in cluster time'
BEGIN;
SELECT now() = now() AS stable, statement_timestamp() >= now() AS later;
COMMIT;
