// npm node-redis-warlock (on node-redis 3, the client it is written for) against the three Redis
// ports of one raftlock cluster (issue 22), unmodified: SET NX PX to lock, Lua scripts (loaded and
// run by SHA) to unlock and to extend only while the lock is still the caller's.
//
// A probe checks refuse, touch and unlock across nodes; then worker processes (processes.js)
// spread over the three nodes loop warlock.optimistic -> read-modify-write of a counter -> unlock,
// and the counter must equal the number of critical sections.
//
//   node warlock_test.js PORT PORT PORT
'use strict';
const redis = require('redis');
const Warlock = require('node-redis-warlock');
const { promisify } = require('util');
const { runProcesses, workerTask, serve } = require('./processes');

const ports = process.argv.slice(2).map(Number);
const workers = 6;
const rounds = 25;

function client(port) {
    const c = redis.createClient({ port, host: '127.0.0.1' });
    for (const name of ['get', 'set', 'del', 'pttl', 'exists', 'quit']) {
        c[`${name}Async`] = promisify(c[name]).bind(c);
    }
    return c;
}

function lock(warlock, key, ttl) {
    return new Promise((resolve, reject) =>
        warlock.lock(key, ttl, (err, unlock, id) => (err ? reject(err) : resolve({ unlock, id }))));
}

function optimistic(warlock, key, ttl) {
    return new Promise((resolve, reject) =>
        warlock.optimistic(key, ttl, 100000, 5, (err, unlock) => (err ? reject(err) : resolve(unlock))));
}

async function main() {
    const clients = ports.map(client);
    const locks = clients.map((c) => Warlock(c));

    const held = await lock(locks[0], 'warlock-probe', 5000);
    if (typeof held.unlock !== 'function') throw new Error('a free lock was refused');
    const second = await lock(locks[1], 'warlock-probe', 5000);
    if (second.unlock !== false) throw new Error('a held lock was granted through another node');
    if (!(await locks[2].touch('warlock-probe', held.id, 20000))) throw new Error('touch refused its owner');
    const pttl = await clients[1].pttlAsync('warlock-probe:lock');
    if (!(pttl > 15000 && pttl <= 20000)) throw new Error(`touch: pttl ${pttl}`);
    if (await locks[2].touch('warlock-probe', 'someone-else', 20000)) throw new Error('touch by a stranger');
    await new Promise((resolve, reject) => held.unlock((err) => (err ? reject(err) : resolve())));
    if ((await clients[2].existsAsync('warlock-probe:lock')) !== 0) throw new Error('unlock left the key');
    console.log('ok: warlock lock/refuse/touch/unlock through three nodes');

    await clients[0].delAsync('warlock-counter');
    const start = Date.now();
    await runProcesses(__filename, workers, {});
    const got = Number(await clients[1].getAsync('warlock-counter'));
    const want = workers * rounds;
    const seconds = (Date.now() - start) / 1000;
    console.log(`warlock: counter ${got} of ${want} after ${seconds.toFixed(1)} s ` +
                `(${workers} worker processes on ${ports.length} nodes)`);
    await Promise.all(clients.map((c) => c.quitAsync()));
    if (got !== want) throw new Error(`lost updates: ${want - got}`);
}

// A worker process: `rounds` critical sections on node index % 3.
async function worker({ index }, ctx) {
    const c = client(ports[index % ports.length]);
    const warlock = Warlock(c);
    await ctx.ready();
    for (let i = 0; i < rounds; i++) {
        const unlock = await optimistic(warlock, 'warlock-counter', 10000);
        const value = Number((await c.getAsync('warlock-counter')) || 0);
        await c.setAsync('warlock-counter', String(value + 1));
        await new Promise((resolve, reject) => unlock((err) => (err ? reject(err) : resolve())));
    }
    await c.quitAsync();
}

if (workerTask()) serve(worker);
else main().catch((e) => {
    console.error('FAIL:', e.message);
    process.exit(1);
});
