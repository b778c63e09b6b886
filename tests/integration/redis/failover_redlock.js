// ioredis + redlock while the leader is killed (issue 22), run by failover.py beside its redis-py
// workers, through the same kill and restart. Each worker, a process of its own (processes.js),
// takes a single-endpoint Redlock on one node (docs/redis-mode.md: one endpoint, the replicated
// store is the quorum), INCRs the shared counter, SETs a key of its own and unlocks; any error
// (its node killed under it, TRYAGAIN while there is no leader, Redlock's attempts spent) moves it
// to the next node.
//
// Checked here: no two workers held the lock at once while both were within its validity
// (Redlock's expiration: the TTL less its clock drift allowance), and some locks were taken on
// each side of the kill. The acknowledged INCRs and SETs go to failover.py as the last line of
// standard output (JSON), which checks them on every node with its own.
//
//   node failover_redlock.js SECONDS PORT PORT PORT
'use strict';
const Redis = require('ioredis');
const Redlock = require('redlock');
const { runProcesses, workerTask, serve } = require('./processes');

const seconds = Number(process.argv[2]);
const ports = process.argv.slice(3).map(Number);
const workers = 3;
const ttl = 3000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A worker process: resolves to its sections and its outcome (the acknowledged INCRs and SETs).
async function worker({ index, deadline }, ctx) {
    const sections = [];
    const outcome = { acked_incr: 0, failed_incr: 0, acked_keys: [], errors: 0 };
    await ctx.ready();
    let node = index % ports.length;
    let n = 0;
    while (Date.now() < deadline) {
        const client = new Redis({ port: ports[node], maxRetriesPerRequest: 1, connectTimeout: 2000,
                                   commandTimeout: 15000, retryStrategy: () => null });
        client.on('error', () => {});  // reported through the commands that fail
        const redlock = new Redlock([client], { retryCount: 100, retryDelay: 20, retryJitter: 10 });
        let section = null;
        try {
            const lock = await redlock.lock('failover-redlock', ttl);
            section = { worker: index, start: Date.now(), end: 0, expiration: lock.expiration };
            sections.push(section);
            try {
                await client.incr('counter');
                outcome.acked_incr++;
            } catch (e) {
                outcome.failed_incr++;
                throw e;
            }
            const key = `r:${index}:${++n}`;
            await client.set(key, 'x');
            outcome.acked_keys.push(key);
            section.end = Date.now();
            await lock.unlock();
        } catch (e) {
            if (section && !section.end) section.end = Date.now();
            outcome.errors++;
            node = (node + 1) % ports.length;
            await sleep(50);
        } finally {
            client.disconnect();
        }
    }
    return { sections, outcome };
}

async function main() {
    const started = Date.now();
    const deadline = started + seconds * 1000;
    const results = await runProcesses(__filename, workers, { deadline });
    const sections = results.flatMap((r) => r.sections);
    const outcome = { acked_incr: 0, failed_incr: 0, acked_keys: [], errors: 0 };
    for (const r of results) {
        for (const key of ['acked_incr', 'failed_incr', 'errors']) outcome[key] += r.outcome[key];
        outcome.acked_keys.push(...r.outcome.acked_keys);
    }
    // Two holders at once, each still within its lock's validity, is a safety violation.
    let overlaps = 0;
    for (let i = 0; i < sections.length; i++) {
        for (let j = i + 1; j < sections.length; j++) {
            const a = sections[i];
            const b = sections[j];
            const from = Math.max(a.start, b.start);
            const to = Math.min(a.end, a.expiration, b.end, b.expiration);
            if (from < to) {
                overlaps++;
                console.error(`FAIL: workers ${a.worker} and ${b.worker} both held the lock for ` +
                              `${to - from} ms within its validity`);
            }
        }
    }
    const quarter = started + (seconds * 1000) / 4;
    const before = sections.filter((s) => s.start < quarter).length;
    const after = sections.filter((s) => s.start > started + (seconds * 1000) / 2).length;
    console.error(`redlock: ${sections.length} locks taken (${before} before the kill, ${after} ` +
                  `after the restart), ${outcome.acked_incr} INCRs acknowledged, ` +
                  `${outcome.errors} errors moved a worker to another node`);
    if (overlaps > 0 || before === 0 || after === 0) {
        if (before === 0 || after === 0) console.error('FAIL: no lock taken on one side of the kill');
        process.exit(1);
    }
    console.log(JSON.stringify(outcome));
}

if (workerTask()) serve(worker);
else main().catch((e) => {
    console.error('FAIL:', e.message);
    process.exit(1);
});
