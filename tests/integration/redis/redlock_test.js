// ioredis + redlock (npm) against the three Redis ports of one raftlock cluster (issue 8).
//
// Redlock takes a lock by SET NX PX on a majority of *independent* Redis servers. Three ports of
// one raftlock cluster are one replicated keyspace: the SET through the first node wins and the
// other two find the key taken, so a three-endpoint Redlock never reaches its majority. The test
// checks that this configuration fails safely (it refuses, and leaves no key behind), then uses
// Redlock the way it is meant for one store — one client, each worker on a different node — and
// checks mutual exclusion with a read-modify-write counter, incremented by worker processes
// (processes.js) spread over the nodes, plus refuse, extend and unlock through Redlock's Lua
// scripts across nodes.
//
//   node redlock_test.js PORT PORT PORT
'use strict';
const Redis = require('ioredis');
const Redlock = require('redlock');
const { runProcesses, workerTask, serve } = require('./processes');

const ports = process.argv.slice(2).map(Number);
const workers = 6;
const increments = 50;

async function main() {
    const clients = ports.map((port) => new Redis({ port, lazyConnect: false, maxRetriesPerRequest: 5 }));
    await clients[0].del('redlock-counter');

    // Extend and unlock through Redlock's scripts; a second lock on the same resource must fail.
    const probe = new Redlock([clients[0]], { retryCount: 0 });
    const held = await probe.lock('redlock-probe', 2000);
    let refused = false;
    try {
        await new Redlock([clients[1]], { retryCount: 0 }).lock('redlock-probe', 2000);
    } catch (e) {
        refused = e instanceof Redlock.LockError;
    }
    if (!refused) throw new Error('a held lock was granted through another node');
    const extended = await held.extend(10000);
    const pttl = await clients[2].pttl('redlock-probe');
    if (!(pttl > 8000 && pttl <= 10000)) throw new Error(`extend: pttl ${pttl}`);
    await extended.unlock();
    if ((await clients[1].exists('redlock-probe')) !== 0) throw new Error('unlock left the key');
    console.log('ok: redlock lock/refuse/extend/unlock through three nodes');

    // Three endpoints of one store: never a majority, so never granted, and nothing left behind.
    let quorum = 'granted';
    try {
        await new Redlock(clients, { retryCount: 3, retryDelay: 10 }).lock('redlock-quorum', 2000);
    } catch (e) {
        quorum = e instanceof Redlock.LockError ? 'refused' : e.message;
    }
    if (quorum !== 'refused') throw new Error(`three-endpoint Redlock: ${quorum}`);
    if ((await clients[0].exists('redlock-quorum')) !== 0) throw new Error('a refused lock left its key');
    console.log('ok: a three-endpoint Redlock on one replicated store is refused, safely');

    const start = Date.now();
    await runProcesses(__filename, workers, {});
    const got = Number(await clients[0].get('redlock-counter'));
    const want = workers * increments;
    const seconds = (Date.now() - start) / 1000;
    console.log(`counter ${got} of ${want} after ${seconds.toFixed(1)} s (${workers} worker ` +
                `processes on ${ports.length} nodes)`);
    clients.forEach((c) => c.disconnect());
    if (got !== want) throw new Error(`lost updates: ${want - got}`);
}

// A worker process: `increments` times lock -> GET -> SET + 1 -> unlock, on node index % 3.
async function worker({ index }, ctx) {
    const client = new Redis({ port: ports[index % ports.length], maxRetriesPerRequest: 5 });
    const redlock = new Redlock([client], { retryCount: 2000, retryDelay: 5, retryJitter: 5 });
    await ctx.ready();
    for (let i = 0; i < increments; i++) {
        const lock = await redlock.lock('redlock-counter-lock', 10000);
        const value = Number((await client.get('redlock-counter')) || 0);
        await client.set('redlock-counter', String(value + 1));
        await lock.unlock();
    }
    client.disconnect();
}

if (workerTask()) serve(worker);
else main().catch((e) => {
    console.error('FAIL:', e.message);
    process.exit(1);
});
