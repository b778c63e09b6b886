// npm redis-semaphore (on ioredis) against the three Redis ports of one raftlock cluster (issue 22):
// Mutex, Semaphore, MultiSemaphore and RedlockMutex, unmodified. Its semaphores are sorted sets
// driven by Lua (ZREMRANGEBYSCORE, ZCARD, ZADD, ZSCORE, ZREM, PEXPIRE); its mutex is SET NX PX
// with Lua release and refresh.
//
// Each kind: worker processes (processes.js) spread over the three nodes loop acquire -> critical
// section -> release. In the critical section a worker adds itself to a set of current holders
// (SADD, then SCARD) and does a read-modify-write of a counter; the most holders any worker saw
// must not exceed the limit, and the counter must equal the number of critical sections (no lost
// update).
//
//   node semaphore_test.js PORT PORT PORT
'use strict';
const Redis = require('ioredis');
const { Mutex, Semaphore, MultiSemaphore, RedlockMutex } = require('redis-semaphore');
const { runProcesses, workerTask, serve } = require('./processes');

const ports = process.argv.slice(2).map(Number);
const workers = 6;
const rounds = 25;
const options = { lockTimeout: 10000, acquireTimeout: 60000, retryInterval: 5 };

// The kinds under test: name -> [limit, a lock on one client].
const kinds = {
    Mutex: [1, (c) => new Mutex(c, 'sem-mutex', options)],
    Semaphore: [2, (c) => new Semaphore(c, 'sem-semaphore', 2, options)],
    MultiSemaphore: [2, (c) => new MultiSemaphore(c, 'sem-multi', 4, 2, options)],
    // A Redlock over one endpoint (any node): the replicated store is the quorum
    // (docs/redis-mode.md).
    RedlockMutex: [1, (c) => new RedlockMutex([c], 'sem-redlock', options)],
};

async function exercise(name) {
    const [limit] = kinds[name];
    const admin = new Redis({ port: ports[0] });
    const counter = `sem-counter:${name}`;
    await admin.del(counter, `sem-holders:${name}`);
    const start = Date.now();
    const most = Math.max(...(await runProcesses(__filename, workers, { name })));
    const got = Number(await admin.get(counter));
    const want = workers * rounds;
    const seconds = (Date.now() - start) / 1000;
    admin.disconnect();
    console.log(`${name}: counter ${got} of ${want}, at most ${most} holder(s) at once (limit ` +
                `${limit}), ${seconds.toFixed(1)} s, ${workers} worker processes on ` +
                `${ports.length} nodes`);
    if (most > limit) throw new Error(`${name}: ${most} holders at once, limit ${limit}`);
    if (most < 1) throw new Error(`${name}: no critical section ran`);
    if (limit === 1 && got !== want) throw new Error(`${name}: lost updates: ${want - got}`);
}

// A worker process: `rounds` critical sections of kind `name` on node index % 3; resolves to the
// most holders it saw at once.
async function worker({ name, index }, ctx) {
    const client = new Redis({ port: ports[index % ports.length], maxRetriesPerRequest: 5 });
    const counter = `sem-counter:${name}`;
    const holders = `sem-holders:${name}`;
    const me = `w${index}`;
    let most = 0;
    await ctx.ready();
    for (let i = 0; i < rounds; i++) {
        const lock = kinds[name][1](client);
        await lock.acquire();
        await client.sadd(holders, me);
        most = Math.max(most, await client.scard(holders));
        const value = Number((await client.get(counter)) || 0);
        await client.set(counter, String(value + 1));
        await client.srem(holders, me);
        await lock.release();
    }
    client.disconnect();
    return most;
}

async function main() {
    // A held mutex and a full semaphore refuse a second holder through another node.
    const a = new Redis({ port: ports[0] });
    const b = new Redis({ port: ports[1] });
    const held = new Mutex(a, 'sem-probe', { lockTimeout: 5000 });
    await held.acquire();
    if (await new Mutex(b, 'sem-probe', { acquireTimeout: 200 }).tryAcquire()) {
        throw new Error('a held Mutex was granted through another node');
    }
    await held.release();
    const again = new Mutex(b, 'sem-probe');
    if (!(await again.tryAcquire())) throw new Error('a released Mutex stayed held');
    await again.release();  // (a held lock keeps refreshing, on a connection closed below)
    // The library keeps a Semaphore in the sorted set semaphore:KEY.
    const full = [new Semaphore(a, 'sem-full', 2), new Semaphore(b, 'sem-full', 2)];
    for (const s of full) await s.acquire();
    if (await new Semaphore(b, 'sem-full', 2, { acquireTimeout: 200 }).tryAcquire()) {
        throw new Error('a third permit of a Semaphore of two was granted');
    }
    if ((await a.zcard('semaphore:sem-full')) !== 2) throw new Error('the semaphore does not hold two members');
    for (const s of full) await s.release();
    if ((await b.exists('semaphore:sem-full')) !== 0) throw new Error('a released semaphore left its key');
    a.disconnect();
    b.disconnect();
    console.log('ok: Mutex and Semaphore refuse a holder too many through another node');

    // Mutual exclusion through each kind. A Semaphore of two and a MultiSemaphore of 2 permits out
    // of 4 let two workers in at once (their counter updates may race: only the holders count).
    for (const name of Object.keys(kinds)) await exercise(name);
}

if (workerTask()) serve(worker);
else main().catch((e) => {
    console.error('FAIL:', e.message);
    process.exit(1);
});
