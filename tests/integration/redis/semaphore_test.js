// npm redis-semaphore (on ioredis) against the three Redis ports of one raftlock cluster (issue 22):
// Mutex, Semaphore, MultiSemaphore and RedlockMutex, unmodified. Its semaphores are sorted sets
// driven by Lua (ZREMRANGEBYSCORE, ZCARD, ZADD, ZSCORE, ZREM, PEXPIRE); its mutex is SET NX PX
// with Lua release and refresh.
//
// Each kind: workers spread over the three nodes loop acquire -> critical section -> release. In
// the critical section a worker adds itself to a set of current holders (SADD, then SCARD) and
// does a read-modify-write of a counter; the most holders ever seen must not exceed the limit,
// and the counter must equal the number of critical sections (no lost update).
//
//   node semaphore_test.js PORT PORT PORT
'use strict';
const Redis = require('ioredis');
const { Mutex, Semaphore, MultiSemaphore, RedlockMutex } = require('redis-semaphore');

const ports = process.argv.slice(2).map(Number);
const workers = 6;
const rounds = 25;
const options = { lockTimeout: 10000, acquireTimeout: 60000, retryInterval: 5 };

async function exercise(name, limit, makeLock) {
    const clients = ports.map((port) => new Redis({ port, maxRetriesPerRequest: 5 }));
    const counter = `sem-counter:${name}`;
    const holders = `sem-holders:${name}`;
    await clients[0].del(counter, holders);
    let most = 0;
    const start = Date.now();
    await Promise.all(Array.from({ length: workers }, async (_, w) => {
        const client = clients[w % clients.length];
        for (let i = 0; i < rounds; i++) {
            const lock = makeLock(client, clients);
            await lock.acquire();
            const me = `w${w}`;
            await client.sadd(holders, me);
            most = Math.max(most, await client.scard(holders));
            const value = Number((await client.get(counter)) || 0);
            await client.set(counter, String(value + 1));
            await client.srem(holders, me);
            await lock.release();
        }
    }));
    const got = Number(await clients[1].get(counter));
    const want = workers * rounds;
    const seconds = (Date.now() - start) / 1000;
    clients.forEach((c) => c.disconnect());
    console.log(`${name}: counter ${got} of ${want}, at most ${most} holder(s) at once (limit ` +
                `${limit}), ${seconds.toFixed(1)} s, ${workers} workers on ${ports.length} nodes`);
    if (most > limit) throw new Error(`${name}: ${most} holders at once, limit ${limit}`);
    if (most < 1) throw new Error(`${name}: no critical section ran`);
    if (limit === 1 && got !== want) throw new Error(`${name}: lost updates: ${want - got}`);
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
    await exercise('Mutex', 1, (c) => new Mutex(c, 'sem-mutex', options));
    await exercise('Semaphore', 2, (c) => new Semaphore(c, 'sem-semaphore', 2, options));
    await exercise('MultiSemaphore', 2, (c) => new MultiSemaphore(c, 'sem-multi', 4, 2, options));
    // A Redlock over one endpoint (any node): the replicated store is the quorum (docs/redis-mode.md).
    await exercise('RedlockMutex', 1, (c) => new RedlockMutex([c], 'sem-redlock', options));
}

main().catch((e) => {
    console.error('FAIL:', e.message);
    process.exit(1);
});
