// The locks whose waiters wake on a release message (issue 22) while the leader is killed, run by
// failover.py beside its redis-py workers and failover_redlock.js, through the same kill -9 and
// restart: npm simple-redis-mutex 3.0 on node-redis 5, and the Redisson-style lock of
// redisson_lock.js on ioredis, each on a lock, a counter and a holder set of its own, with a 3 s
// lease (simple-redis-mutex's timeout, the Redisson-style lease): a lock whose holder died with
// its node is free 3 s later.
//
// Three workers per kind, each a process of its own (processes.js), started one on each node, loop
// for SECONDS: lock -> SADD of a member of their own to the kind's holder set, SCARD (more than one
// member: SMEMBERS, to look) -> GET of the kind's counter, SET of it + 1 -> SREM -> unlock. The
// clients stay connected and find their own way back, as an application's do. Each
// simple-redis-mutex worker holds a node-redis 5 client per node, each reconnecting to its own node
// (the killed node's comes back with the node), the offline queue off; it moves to the next node's
// client on any error of its round, and a lock() that waited a whole lease (failAfter) is given up
// and asked again there. The module's subscriber (one per process), a duplicate of the first client
// it was given, reconnects and resubscribes by itself. Each Redisson-style worker holds a command
// and a subscriber connection (ioredis); a connection that breaks reconnects to the next node (its
// retryStrategy moves options.port on) and ioredis's autoResubscribe subscribes it again. No
// command is queued while disconnected or sent again after a reconnect: a command the kill cut off
// fails, and its round with it (retried; a lock it may hold runs out with its lease). Waiters fall
// back on a timer when no message comes, as the libraries do: simple-redis-mutex polls every
// second, the Redisson-style waiter waits at most the holder's PTTL.
//
// The counter: a SET answered OK before its lock's lease ran out is acknowledged (the lease
// counted from just before the request that took the lock was sent, so it ends no later than the
// server's); a SET that failed may or may not have been applied; one answered after the lease is
// counted apart (late). A SET is sent only while 500 ms of the lease are left, else the round is
// abandoned. failover.py checks acknowledged <= counter <= acknowledged + failed + late on every
// node, per kind.
//
// Checked here, per kind: at most one holder at once, both as the server saw it (no other member
// in the holder set whose owner's lease had not run out: members carry that deadline; those past
// it, left by a round cut off, are removed) and as the workers saw it (their sections, within
// each lease, never overlap); critical sections completed before the kill (the run's first
// quarter) and after the restart (its second half); no lock() still waiting 10 s after the run
// (none stuck on a release message lost with the dead node: the timers must take over), and no
// Redisson-style wait longer than 3 leases (a holder that died frees the lock after one lease,
// and the election before it takes 1-3 s; simple-redis-mutex's waits end at failAfter). How
// evenly the workers shared the lock after the restart is printed, not required: while a
// worker's simple-redis-mutex subscriber is away with its node, that worker only polls, and the
// releasing worker, asking again 5 ms later, mostly wins. Resubscription: a long-lived subscriber
// per kind on each node (ioredis moving on like the workers' connections, node-redis 5
// reconnecting to its node) must hear release messages after each of its reconnects, and one at
// least must have reconnected. The last line of standard output is failover.py's JSON: no shared
// INCRs or SETs, and {"counters": {KEY: {"acked": n, "failed": n, "late": n}}}.
//
//   node failover_pubsub.js SECONDS PORT PORT PORT
//   (NODE_PATH: node-redis 5 and simple-redis-mutex's folder first, then ioredis's)
'use strict';
const Redis = require('ioredis');
const { createClient } = require('redis');  // node-redis 5 (NODE_PATH puts it first)
const srm = require('simple-redis-mutex');
const { RedissonLike } = require('./redisson_lock');
const { runProcesses, workerTask, serve } = require('./processes');

const seconds = Number(process.argv[2]);
const ports = process.argv.slice(3).map(Number);
const workersPerKind = 3;
const lease = 3000;            // each kind's lock TTL, ms
const pollMs = 1000;           // simple-redis-mutex's polling interval
const setMargin = 500;         // a SET is sent only while this much of the lease is left
const stuckAfterMs = 10000;    // a lock() still waiting this long after the run is stuck
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const SRM_CHANNEL = '@simple-redis-mutex:locks-releases';

// simple-redis-mutex's lock() runs each attempt as tryLock(...).then(...) with no catch, so an
// attempt cut off by the kill is an unhandled rejection (which would end the process); its
// subscriber logs every failed reconnect. Both are counted here instead.
let unhandled = 0;
let unhandledFirst = '';
process.on('unhandledRejection', (e) => {
    if (!unhandled++) unhandledFirst = String(e && e.message);
});
let srmSubscriberErrors = 0;
const consoleError = console.error.bind(console);
console.error = (...args) => {
    if (String(args[0]).startsWith('simple-redis-mutex subscriber error')) srmSubscriberErrors++;
    else consoleError(...args);
};

const nextPort = (port) => ports[(ports.indexOf(Number(port)) + 1) % ports.length];

// ioredis: nothing queued offline or sent again after a reconnect; a broken connection reconnects
// to the next node (the connector reads options.port at each connect).
const IOREDIS_OPTIONS = { maxRetriesPerRequest: 0, enableOfflineQueue: false,
                          autoResendUnfulfilledCommands: false, connectTimeout: 2000,
                          commandTimeout: 15000 };
function movesOn(conn) {
    conn.on('error', () => {});  // reported through the commands that fail
    conn.options.retryStrategy = () => {
        conn.options.port = nextPort(conn.options.port);
        return 100;
    };
    return conn;
}
const ready = (conn) => (conn.status === 'ready' ? null
                         : new Promise((resolve) => conn.once('ready', resolve)));

// node-redis 5: reconnects to its own node every 100 ms, fails commands while disconnected.
function nodeRedisClient(port) {
    const client = createClient({ socket: { port, connectTimeout: 2000,
                                            reconnectStrategy: () => 100 },
                                  disableOfflineQueue: true });
    client.on('error', () => {});
    return client;
}

// --- the two kinds of worker: acquire() resolves to when the request that took the lock was sent

function srmWorker(w) {
    const clients = ports.map((port) => {
        const client = nodeRedisClient(port);
        // The time each SET NX that took the lock was sent (simple-redis-mutex does not say).
        const set = client.set.bind(client);
        client.set = async (...args) => {
            const sent = Date.now();
            const reply = await set(...args);
            if (args[2] && args[2].NX && reply === 'OK') client.tookAt = sent;
            return reply;
        };
        return client;
    });
    let node = w % ports.length;
    let release = null;
    return {
        start: () => Promise.all(clients.map((c) => c.connect())),
        async acquire() {
            // (a client whose node is down would only fail each attempt until failAfter)
            for (let i = 0; i < ports.length && !clients[node].isReady; i++) {
                node = (node + 1) % ports.length;
            }
            const client = clients[node];
            const asked = Date.now();
            client.tookAt = 0;
            release = await srm.lock(client, 'failover-srm', { timeout: lease,
                                                              pollingInterval: pollMs,
                                                              failAfter: lease });
            return client.tookAt || asked;
        },
        release: () => release(),
        ops: () => {
            const c = clients[node];
            return { get: (k) => c.get(k), set: (k, v) => c.set(k, v),
                     sadd: (k, m) => c.sAdd(k, m), scard: (k) => c.sCard(k),
                     smembers: (k) => c.sMembers(k), srem: (k, m) => c.sRem(k, m) };
        },
        moveOn: () => { node = (node + 1) % ports.length; },
    };
}

function redissonWorker(w) {
    const c = new RedissonLike(ports[w % ports.length], `failover-${w}`, IOREDIS_OPTIONS);
    movesOn(c.redis);
    movesOn(c.sub);
    let thread = 0;  // one owner per round: a hold left by a cut-off round runs out, not re-entered
    return {
        wakes: c.wakes,
        start: () => Promise.all([ready(c.redis), ready(c.sub)]),
        acquire: () => c.lock('failover-rlock', lease, ++thread),
        release: () => c.unlock('failover-rlock', lease, thread),
        ops: () => {
            const r = c.redis;
            return { get: (k) => r.get(k), set: (k, v) => r.set(k, v),
                     sadd: (k, m) => r.sadd(k, m), scard: (k) => r.scard(k),
                     smembers: (k) => r.smembers(k), srem: (k, m) => r.srem(k, m) };
        },
        moveOn: () => {},  // its connections move on by themselves
    };
}

const kinds = [
    { name: 'simple-redis-mutex', key: 'failover-pubsub:srm', make: srmWorker,
      channel: SRM_CHANNEL },
    { name: 'Redisson-style lock', key: 'failover-pubsub:rlock', make: redissonWorker,
      channel: 'redisson_lock__channel:{failover-rlock}', longestWait: 3 * lease },
];

class Expired extends Error {}

// --- the loop ------------------------------------------------------------------------------------

async function work(kind, w, worker, deadline) {
    const counter = `${kind.key}:counter`;
    const holders = `${kind.key}:holders`;
    const f = kind.figures;
    const mine = { worker: w, after: 0 };
    kind.perWorker.push(mine);
    let n = 0;
    while (Date.now() < deadline) {
        let section = null;
        const asked = Date.now();
        mine.waitingSince = asked;
        try {
            const sent = await worker.acquire();
            mine.waitingSince = 0;
            const leaseEnd = sent + lease;
            if (Date.now() - asked > f.longestWait) {
                f.longestWait = Date.now() - asked;
                f.longestWaiter = w;
            }
            section = { worker: w, start: Date.now(), end: 0, leaseEnd, done: false };
            kind.sections.push(section);
            const ops = worker.ops();
            const member = `${w}:${++n}@${leaseEnd}`;
            await ops.sadd(holders, member);
            if (Number(await ops.scard(holders)) > 1) {
                const members = await ops.smembers(holders);
                const now = Date.now();
                if (now >= leaseEnd) throw new Expired();
                const others = members.filter((m) => m !== member);
                const live = others.filter((m) => Number(m.split('@')[1]) > now);
                const stale = others.filter((m) => Number(m.split('@')[1]) <= now);
                if (live.length) {
                    f.holderViolations.push(`worker ${w} found ${live.join(', ')} in the holder ` +
                                            `set, ${live.map((m) => Number(m.split('@')[1]) - now)
                                                .join(', ')} ms before their lease's end`);
                }
                f.mostHolders = Math.max(f.mostHolders, 1 + live.length);
                if (stale.length) {
                    await ops.srem(holders, stale);
                    f.staleMembers += stale.length;
                }
            }
            const value = Number((await ops.get(counter)) || 0);
            if (Date.now() > leaseEnd - setMargin) throw new Expired();
            try {
                await ops.set(counter, String(value + 1));
            } catch (e) {
                f.failed++;
                throw e;
            }
            if (Date.now() <= leaseEnd) f.acked++;
            else f.late++;
            section.done = true;
            if (section.start > kind.afterFrom) mine.after++;
            await ops.srem(holders, member);
            section.end = Date.now();
            await worker.release();
            await sleep(5);  // a little work outside the lock
        } catch (e) {
            mine.waitingSince = 0;
            if (section && !section.end) section.end = Date.now();
            if (e instanceof Expired) f.expired++;
            else f.errors++;
            worker.moveOn();
            await sleep(50);
        }
    }
}

// One subscriber per node, subscribed once: after each reconnect it must hear release messages.
async function listeners(kind) {
    const made = [];
    for (const port of ports) {
        const l = { port, readies: 0, since: 0, total: 0 };
        const onMessage = () => { l.total++; l.since++; };
        if (kind.channel === SRM_CHANNEL) {
            const c = nodeRedisClient(port);
            c.on('ready', () => { l.readies++; l.since = 0; });
            await c.connect();
            await c.subscribe(kind.channel, onMessage);
            l.close = () => c.destroy();
        } else {
            const c = movesOn(new Redis({ port, ...IOREDIS_OPTIONS }));
            c.on('ready', () => { l.readies++; l.since = 0; });
            c.on('message', onMessage);
            await ready(c);
            await c.subscribe(kind.channel);
            l.close = () => c.disconnect();
        }
        made.push(l);
    }
    return made;
}

// A worker process: worker `w` of kinds[kind] until the deadline; resolves to what it saw.
async function workerProcess({ kind: k, w, started, deadline }, ctx) {
    const kind = { ...kinds[k], figures: newFigures(), sections: [], perWorker: [],
                   afterFrom: afterFrom(started) };
    const worker = kind.make(w);
    await worker.start();
    ctx.status = () => ({ waitingSince: kind.perWorker[0]?.waitingSince || 0 });
    await ctx.ready();
    await work(kind, w, worker, deadline);
    return { figures: kind.figures, sections: kind.sections, mine: kind.perWorker[0],
             wakes: worker.wakes || null, unhandled, unhandledFirst, srmSubscriberErrors };
}

const newFigures = () => ({ acked: 0, failed: 0, late: 0, expired: 0, errors: 0, mostHolders: 1,
                            holderViolations: [], staleMembers: 0, longestWait: 0 });
const afterFrom = (started) => started + (seconds * 1000) / 2;

// Adds one worker process's result to its kind's totals.
function merge(kind, r) {
    const f = kind.figures;
    for (const key of ['acked', 'failed', 'late', 'expired', 'errors', 'staleMembers']) {
        f[key] += r.figures[key];
    }
    f.mostHolders = Math.max(f.mostHolders, r.figures.mostHolders);
    f.holderViolations.push(...r.figures.holderViolations);
    if (r.figures.longestWait > f.longestWait) {
        f.longestWait = r.figures.longestWait;
        f.longestWaiter = r.figures.longestWaiter;
    }
    kind.sections.push(...r.sections);
    kind.perWorker.push(r.mine);
    if (r.wakes) {
        kind.wakes = kind.wakes || { message: 0, timer: 0 };
        kind.wakes.message += r.wakes.message;
        kind.wakes.timer += r.wakes.timer;
    }
    kind.unhandled += r.unhandled;
    if (!kind.unhandledFirst) kind.unhandledFirst = r.unhandledFirst;
    kind.subscriberErrors += r.srmSubscriberErrors;
}

async function main() {
    const started = Date.now();
    const deadline = started + seconds * 1000;
    const admin = new Redis({ port: ports[0] });
    for (const kind of kinds) {
        await admin.del(`${kind.key}:counter`, `${kind.key}:holders`);
        Object.assign(kind, { figures: newFigures(), sections: [], perWorker: [],
                              afterFrom: afterFrom(started), unhandled: 0, unhandledFirst: '',
                              subscriberErrors: 0 });
        kind.listeners = await listeners(kind);
    }
    admin.disconnect();
    // Worker process i runs worker i % workersPerKind of kind i / workersPerKind (their own task).
    const tasks = kinds.flatMap((_, k) => Array.from({ length: workersPerKind }, (__, w) => ({
        kind: k, w, started, deadline })));
    const failures = [];
    let results = [];
    try {
        results = await runProcesses(__filename, tasks.length, (i) => tasks[i],
                                     { timeoutMs: deadline - Date.now() + stuckAfterMs });
    } catch (e) {
        failures.push(e.message);
        for (const [i, status] of Object.entries(e.statuses || {})) {
            if (status && status.waitingSince) {
                const waited = (Date.now() - status.waitingSince) / 1000;
                failures.push(`${kinds[tasks[i].kind].name}: worker ${tasks[i].w} has waited for ` +
                              `the lock ${waited.toFixed(1)} s`);
            }
        }
        for (const failure of failures) console.error(`FAIL: ${failure}`);
        process.exit(1);
    }
    results.forEach((r, i) => merge(kinds[tasks[i].kind], r));
    const quarter = started + (seconds * 1000) / 4;
    const counters = {};
    for (const kind of kinds) {
        const f = kind.figures;
        const done = kind.sections.filter((s) => s.done);
        const before = done.filter((s) => s.start < quarter).length;
        const after = done.filter((s) => s.start > kind.afterFrom).length;
        // Two sections overlapping while both leases ran: the most at once, by a sweep.
        const edges = [];
        for (const s of kind.sections) {
            const to = Math.min(s.end || Date.now(), s.leaseEnd);
            if (s.start < to) edges.push([s.start, 1], [to, -1]);
        }
        edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        let at = 0;
        let most = 0;
        for (const [, d] of edges) most = Math.max(most, (at += d));
        const heard = kind.listeners.map((l) => `${l.port}: ${l.readies - 1} reconnect(s), ` +
                                                `${l.total} heard, ${l.since} since`);
        const wakes = kind.wakes
            ? `; waits ended by a release message ${kind.wakes.message}, by the PTTL ` +
              `${kind.wakes.timer}`
            : `; ${kind.unhandled} lock attempts failed unhandled` +
              `${kind.unhandled ? ` (the first: ${kind.unhandledFirst})` : ''}, ` +
              `${kind.subscriberErrors} subscriber errors`;
        console.error(`${kind.name}: ${done.length} critical sections (${before} before the ` +
                      `kill, ${after} after the restart; per worker after: ` +
                      `${kind.perWorker.map((m) => m.after).join('/')}), SETs ${f.acked} ` +
                      `acknowledged, ${f.failed} failed, ${f.late} late, ${f.expired} rounds ` +
                      `abandoned with the lease running out, ${f.errors} errors retried; at most ` +
                      `${f.mostHolders} holder(s) in the set (${f.staleMembers} stale removed), ` +
                      `${most} section(s) at once; longest wait ${f.longestWait} ms${wakes}; ` +
                      `subscribers ${heard.join('; ')}`);
        for (const v of f.holderViolations) failures.push(`${kind.name}: ${v}`);
        if (most > 1) {
            const shown = [];
            const within = (x) => Math.min(x.end || Date.now(), x.leaseEnd);
            for (const a of kind.sections) {
                for (const b of kind.sections) {
                    const ms = Math.min(within(a), within(b)) - Math.max(a.start, b.start);
                    if (a.worker < b.worker && ms > 0 && shown.length < 3) {
                        shown.push(`workers ${a.worker} and ${b.worker} for ${ms} ms`);
                    }
                }
            }
            failures.push(`${kind.name}: ${most} workers in their sections at once, both within ` +
                          `their lease (${shown.join(', ')})`);
        }
        if (kind.longestWait && f.longestWait > kind.longestWait) {
            failures.push(`${kind.name}: worker ${f.longestWaiter} waited ${f.longestWait} ms ` +
                          'for the lock (release messages did not wake it, and its timer found ' +
                          'the lock taken again and again)');
        }
        if (before === 0 || after === 0) {
            failures.push(`${kind.name}: no critical section ${before === 0 ? 'before the kill'
                                                                 : 'after the restart'}`);
        }
        for (const l of kind.listeners) {
            if (l.readies > 1 && l.since === 0) {
                failures.push(`${kind.name}: the subscriber that started on port ${l.port} ` +
                              'reconnected and heard no release message after: not resubscribed');
            }
        }
        if (!kind.listeners.some((l) => l.readies > 1)) {
            failures.push(`${kind.name}: no subscriber reconnected (resubscription untested)`);
        }
        counters[`${kind.key}:counter`] = { acked: f.acked, failed: f.failed, late: f.late };
    }
    for (const failure of failures) console.error(`FAIL: ${failure}`);
    if (failures.length) process.exit(1);
    for (const kind of kinds) {
        kind.listeners.forEach((l) => l.close());
    }
    console.log(JSON.stringify({ acked_incr: 0, failed_incr: 0, acked_keys: [], counters }));
    process.exit(0);  // simple-redis-mutex keeps its module-level subscriber open
}

if (workerTask()) serve(workerProcess);
else main().catch((e) => {
    console.error('FAIL:', e.message);
    process.exit(1);
});
