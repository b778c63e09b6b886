// node-postgres ("pg" from npm) against the SQL mode (issue 9): the lost-update test of
// counter.py with another client library. N connections, spread over the nodes, each increment
// one counter M times under each technique with a read-modify-write (read v, write back read + 1),
// so a lock that let two holders in at once would lose updates. Parameters go through the
// extended protocol, some as named prepared statements that are parsed once and bound many times.
// The final counter must be N x M for every technique.
//
//   node counter.js PORT [PORT ...]   (env COUNTER_CONNECTIONS, COUNTER_INCREMENTS)
'use strict';
const { Client } = require('pg');

const ports = process.argv.slice(2).map(Number);
const connections = Number(process.env.COUNTER_CONNECTIONS || 6);
const increments = Number(process.env.COUNTER_INCREMENTS || 40);
const advisoryKey = 7002;
const triesMax = 20000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function one(client, query, values) {
    const result = await client.query(query, values);
    if (result.rows.length !== 1) {
        throw new Error(`${query.text || query}: expected one row, got ${result.rows.length}`);
    }
    return result.rows[0];
}

// Reads v and writes back v + 1; the statements are named, so each connection parses them once.
async function readModifyWrite(client, name) {
    const row = await one(client, {
        name: 'read-v', text: 'SELECT v FROM counters WHERE name = $1', values: [name],
    });
    const result = await client.query({
        name: 'write-v', text: 'UPDATE counters SET v = $1 WHERE name = $2',
        values: [Number(row.v) + 1, name],
    });
    if (result.rowCount !== 1) throw new Error(`UPDATE changed ${result.rowCount} rows`);
}

const techniques = {
    async advisory(client, name) {
        await client.query('SELECT pg_advisory_lock($1)', [advisoryKey]);
        await readModifyWrite(client, name);
        const row = await one(client, 'SELECT pg_advisory_unlock($1) AS released', [advisoryKey]);
        if (row.released !== true) throw new Error(`pg_advisory_unlock returned ${row.released}`);
    },
    async for_update(client, name) {
        await client.query('BEGIN');
        const row = await one(client, 'SELECT v FROM counters WHERE name = $1 FOR UPDATE', [name]);
        await client.query('UPDATE counters SET v = $1 WHERE name = $2', [Number(row.v) + 1, name]);
        await client.query('COMMIT');
    },
    async optimistic(client, name) {
        for (let i = 0; i < triesMax; i++) {
            const row = await one(client, 'SELECT v, version FROM counters WHERE name = $1',
                                  [name]);
            const result = await client.query(
                'UPDATE counters SET v = $1, version = version + 1 ' +
                'WHERE name = $2 AND version = $3', [Number(row.v) + 1, name, row.version]);
            if (result.rowCount === 1) return;
            if (result.rowCount !== 0) throw new Error(`optimistic UPDATE: ${result.rowCount}`);
        }
        throw new Error(`optimistic: no write won in ${triesMax} tries`);
    },
    async lock_table(client, name, me) {
        const lock = `lock:${name}`;
        let acquired = false;
        for (let i = 0; i < triesMax && !acquired; i++) {
            const result = await client.query(
                'INSERT INTO locks (name, owner) VALUES ($1, $2) ' +
                'ON CONFLICT DO NOTHING RETURNING owner',
                [lock, me]);
            acquired = result.rows.length === 1;
            // Polling is the lock table's nature; a short random pause keeps the pollers apart.
            if (!acquired) await sleep(1 + Math.random() * 3);
        }
        if (!acquired) throw new Error(`lock table: not acquired in ${triesMax} tries`);
        await readModifyWrite(client, name);
        const result = await client.query(
            'DELETE FROM locks WHERE name = $1 AND owner = $2 RETURNING owner', [lock, me]);
        if (result.rows.length !== 1) throw new Error('lock table: the release found no row');
    },
    async get_lock(client, name) {
        const row = await one(client, "SELECT GET_LOCK('counter-js', 30) AS got");
        if (row.got !== 1) throw new Error(`GET_LOCK returned ${row.got}`);
        await readModifyWrite(client, name);
        const released = await one(client, "SELECT RELEASE_LOCK('counter-js') AS released");
        if (released.released !== 1) throw new Error(`RELEASE_LOCK returned ${released.released}`);
    },
};

async function main() {
    const clients = [];
    for (let i = 0; i < connections; i++) {
        const client = new Client({
            host: '127.0.0.1', port: ports[i % ports.length], user: 'counter-js',
            database: 'raftlock', connectionTimeoutMillis: 10000,
        });
        await client.connect();
        clients.push(client);
    }
    const admin = clients[0];
    await admin.query('DROP TABLE IF EXISTS counters');
    await admin.query('DROP TABLE IF EXISTS locks');
    await admin.query('CREATE TABLE counters (name text PRIMARY KEY, v bigint NOT NULL, ' +
                      'version bigint NOT NULL DEFAULT 0)');
    await admin.query('CREATE TABLE locks (name text PRIMARY KEY, owner text NOT NULL)');
    let failures = 0;
    for (const [name, increment] of Object.entries(techniques)) {
        await admin.query('INSERT INTO counters (name, v) VALUES ($1, 0)', [name]);
        const start = Date.now();
        await Promise.all(clients.map(async (client, w) => {
            for (let i = 0; i < increments; i++) await increment(client, name, `js${w}`);
        }));
        const seconds = (Date.now() - start) / 1000;
        const row = await one(clients[clients.length - 1],
                              'SELECT v, version FROM counters WHERE name = $1', [name]);
        const got = Number(row.v);
        const want = connections * increments;
        console.log(`${name}: counter ${got} of ${want} after ${seconds.toFixed(1)} s ` +
                    `(node-postgres, ${connections} connections on ${ports.length} nodes)`);
        if (got !== want) {
            console.error(`FAIL: ${name}: lost updates: ${want - got}`);
            failures++;
        }
    }
    const left = await one(admin, 'SELECT count(*) AS n FROM locks');
    if (Number(left.n) !== 0) {
        console.error(`FAIL: ${left.n} lock-table rows left`);
        failures++;
    }
    await Promise.all(clients.map((c) => c.end()));
    if (failures > 0) throw new Error(`${failures} failure(s)`);
}

main().catch((e) => {
    console.error('FAIL:', e.message);
    process.exit(1);
});
