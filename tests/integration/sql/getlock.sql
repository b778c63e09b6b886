-- MySQL's named locks (raftlock only, so checked against getlock.expected): GET_LOCK returns 1
-- when granted and 0 when its own timeout passes; the locks are exclusive, counted, per session,
-- case-insensitive, at most 64 bytes; RELEASE_LOCK says 1 (one count released), 0 (another
-- session holds it) or NULL (nobody does); they outlive transactions and die with the session.
-- Peer b is another session on another node.
\set SHOW_CONTEXT never

\echo '--- counted: taken twice, released twice; case-insensitive names'
SELECT GET_LOCK('nightly', 10);
SELECT GET_LOCK('NightLy', 10);
SELECT IS_FREE_LOCK('nightly'), IS_USED_LOCK('nightly') = pg_backend_pid() AS mine;
SELECT RELEASE_LOCK('nightly');
SELECT RELEASE_LOCK('NIGHTLY');
SELECT RELEASE_LOCK('nightly') IS NULL AS nobody_holds_it;
SELECT IS_FREE_LOCK('nightly'), IS_USED_LOCK('nightly') IS NULL AS unused;

\echo '--- timeouts: 0 tries once, a negative value waits without limit; several locks at once'
SELECT get_lock('a', 0), get_lock('b', -1), GET_LOCK('A', 0);
SELECT RELEASE_ALL_LOCKS();
SELECT RELEASE_ALL_LOCKS();

\echo '--- names: 1 to 64 bytes'
SELECT GET_LOCK('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 0);
SELECT GET_LOCK('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxy', 0);
SELECT GET_LOCK('', 0);
SELECT GET_LOCK(NULL, 0);
SELECT GET_LOCK(5, 0);
SELECT RELEASE_LOCK('5');
SELECT GET_LOCK('a');
SELECT GET_LOCK('a', 'soon');
SELECT RELEASE_ALL_LOCKS();

\echo '--- a GET_LOCK taken in a rolled-back transaction stays held'
BEGIN;
SELECT GET_LOCK('tx', 0);
ROLLBACK;
SELECT RELEASE_LOCK('tx');

\echo '--- another session: 0 from a try, a wait that times out, a wait granted by the release'
\! $PEER open b
SELECT GET_LOCK('shared-name', 0);
\! $PEER send b "SELECT GET_LOCK('shared-name', 0), IS_FREE_LOCK('shared-name'), IS_USED_LOCK('shared-name') IS NOT NULL AS used;"
\! $PEER send b "SELECT RELEASE_LOCK('shared-name');"
\! $PEER send b "SELECT GET_LOCK('shared-name', 1);"
\! $PEER start b "SELECT GET_LOCK('shared-name', 60);"
\! $PEER blocked b
SELECT RELEASE_LOCK('shared-name');
\! $PEER wait b
SELECT GET_LOCK('shared-name', 0), RELEASE_LOCK('shared-name');
\echo '--- lock_timeout does not apply to GET_LOCK, which has its own timeout'
SET lock_timeout = '100ms';
SELECT GET_LOCK('shared-name', 1);
\! $PEER send b "SELECT GET_LOCK('other', 0);"
\echo '--- the locks of a session that ends are released'
RESET lock_timeout;
\! $PEER close b
SELECT GET_LOCK('shared-name', 30), GET_LOCK('other', 30);
SELECT RELEASE_ALL_LOCKS();
