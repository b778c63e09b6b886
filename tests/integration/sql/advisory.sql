-- Advisory locks: session-level locks that stack and outlive transactions, transaction-level
-- locks released at the transaction's end, shared and exclusive modes, the one-key and two-key
-- spaces, unlock warnings, and what another session sees (peer b, on another node for raftlock):
-- try-locks refused, a blocking lock that waits and is granted on release, lock_timeout.
-- Compared with PostgreSQL by compat_test.sh.
\set SHOW_CONTEXT never

\echo '--- session locks stack: locked twice, unlocked twice; a third unlock warns'
SELECT pg_advisory_lock(1);
SELECT pg_advisory_lock(1);
SELECT pg_try_advisory_lock(1) AS again;
SELECT pg_advisory_unlock(1) AS u1, pg_advisory_unlock(1) AS u2;
SELECT pg_advisory_unlock(1) AS u3;
SELECT pg_advisory_unlock(1);
SELECT pg_advisory_unlock(12345) AS never_locked;

\echo '--- shared and exclusive are separate holds of one key'
SELECT pg_advisory_lock_shared(2);
SELECT pg_advisory_unlock(2);
SELECT pg_advisory_unlock_shared(2);
SELECT pg_advisory_lock_shared(3);
SELECT pg_advisory_unlock(3), pg_advisory_unlock_shared(3), pg_advisory_unlock_shared(3);
SELECT pg_advisory_lock(3);
SELECT pg_try_advisory_lock_shared(3) AS shared_too;
SELECT pg_advisory_unlock_shared(3), pg_advisory_unlock(3);

\echo '--- the one-key and two-key forms are separate key spaces; the key range'
SELECT pg_advisory_lock(1, 2);
SELECT pg_advisory_unlock(1, 2), pg_advisory_unlock(1, 2);
SELECT pg_advisory_lock(4294967298);
SELECT pg_advisory_unlock(1, 2) AS two_key, pg_advisory_unlock(4294967298) AS one_key;
SELECT pg_advisory_lock(-9223372036854775808), pg_advisory_lock(9223372036854775807);
SELECT pg_advisory_unlock(-9223372036854775808), pg_advisory_unlock(9223372036854775807);
SELECT pg_advisory_lock(2147483647, -2147483648);
SELECT pg_advisory_unlock(2147483647, -2147483648);
SELECT pg_advisory_lock('12');
SELECT pg_advisory_unlock(12);
SELECT pg_advisory_lock(NULL);
SELECT pg_try_advisory_lock(NULL) AS t, pg_advisory_unlock(NULL) AS u;

\echo '--- pg_advisory_unlock_all releases every session lock, however stacked'
SELECT pg_advisory_lock(5), pg_advisory_lock(5), pg_advisory_lock_shared(6), pg_advisory_lock(7, 8);
SELECT pg_advisory_unlock_all();
SELECT pg_advisory_unlock(5);
SELECT pg_advisory_unlock_shared(6);
SELECT pg_advisory_unlock(7, 8);

\echo '--- transaction locks: held to COMMIT or ROLLBACK, not released by pg_advisory_unlock'
SELECT pg_advisory_xact_lock(10);
SELECT pg_try_advisory_xact_lock(10);
BEGIN;
SELECT pg_advisory_xact_lock(10);
SELECT pg_advisory_xact_lock(10);
SELECT pg_advisory_xact_lock_shared(11);
SELECT pg_try_advisory_xact_lock(12), pg_try_advisory_xact_lock_shared(13);
SELECT pg_try_advisory_xact_lock(12, 13);
SELECT pg_advisory_unlock(10);
SELECT pg_advisory_unlock_shared(11);
COMMIT;

\echo '--- a session lock taken in a rolled-back transaction stays held'
BEGIN;
SELECT pg_advisory_lock(14);
ROLLBACK;
SELECT pg_advisory_unlock(14);
SELECT pg_advisory_unlock(14);
\echo '--- the same key as a session and a transaction lock'
BEGIN;
SELECT pg_advisory_lock(15);
SELECT pg_advisory_xact_lock(15);
SELECT pg_advisory_unlock(15);
SELECT pg_advisory_unlock(15);
COMMIT;

\echo '--- another session: try-locks are refused while held, shared locks are shared'
\! $PEER open b
SELECT pg_advisory_lock(20), pg_advisory_lock_shared(21), pg_advisory_lock(22, 23);
\! $PEER send b "SELECT pg_try_advisory_lock(20) AS excl, pg_try_advisory_lock_shared(20) AS shared;"
\! $PEER send b "SELECT pg_try_advisory_lock_shared(21) AS shared, pg_try_advisory_lock(21) AS excl;"
\! $PEER send b "SELECT pg_try_advisory_lock(22, 23) AS two_key, pg_try_advisory_lock(23, 22) AS swapped;"
\! $PEER send b "SELECT pg_advisory_unlock(20);"
\! $PEER send b "BEGIN; SELECT pg_try_advisory_xact_lock(20), pg_try_advisory_xact_lock_shared(21); COMMIT;"
\echo '--- a blocking lock waits and is granted by the release'
\! $PEER start b "SELECT pg_advisory_lock(20);"
\! $PEER blocked b
SELECT pg_advisory_unlock(20);
\! $PEER wait b
SELECT pg_try_advisory_lock(20) AS now_theirs;
\echo '--- a stacked lock is granted only when its count reaches zero'
SELECT pg_advisory_lock(24), pg_advisory_lock(24);
\! $PEER start b "SELECT pg_advisory_lock(24);"
\! $PEER blocked b
SELECT pg_advisory_unlock(24);
\! $PEER blocked b
SELECT pg_advisory_unlock(24);
\! $PEER wait b
\echo '--- an exclusive waiter waits for every shared holder'
\! $PEER send b "SELECT pg_advisory_unlock_shared(21);"
\! $PEER start b "SELECT pg_advisory_lock(21);"
\! $PEER blocked b
SELECT pg_advisory_unlock_shared(21);
\! $PEER wait b
\echo '--- a transaction lock is released at the end of the transaction'
BEGIN;
SELECT pg_advisory_xact_lock(25);
\! $PEER start b "SELECT pg_advisory_lock(25);"
\! $PEER blocked b
COMMIT;
\! $PEER wait b
\echo '--- lock_timeout bounds the wait of pg_advisory_lock (and of the xact form)'
SET lock_timeout = '100ms';
SELECT pg_advisory_lock(20);
SELECT pg_advisory_lock_shared(24);
BEGIN;
SELECT pg_advisory_xact_lock(25);
SELECT 1;
ROLLBACK;
RESET lock_timeout;
\echo '--- the locks of a session that ends are released'
SET lock_timeout = '20s';
\! $PEER close b
SELECT pg_advisory_lock(20), pg_advisory_lock(21), pg_advisory_lock(24), pg_advisory_lock(25);
SELECT pg_try_advisory_lock(22, 23);
RESET lock_timeout;
SELECT pg_advisory_unlock_all();
