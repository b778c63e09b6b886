// node-zookeeper-client (npm), unmodified, against the ZooKeeper ports of a three-node raftlock
// cluster (issue 21): connect with every node in the connect string; persistent, ephemeral and
// ephemeral-sequential nodes; getChildren, getData and exists with watchers that another client's
// changes fire; setData and remove with versions (BAD_VERSION); a transaction (multi) that commits
// and one that rolls back; ZooKeeper's lock recipe (ephemeral-sequential nodes, a watch on the
// predecessor) written here with the library's API, under three processes on three nodes
// incrementing one counter; then a session that outlives its node's SIGKILL: same session, its
// ephemeral node kept, and watches set before the crash fire after the reconnect (setWatches).
//
//   node node_client.js main KILL_COMMAND HOST:PORT HOST:PORT HOST:PORT
//
// KILL_COMMAND is run with the number (1-3) of the node the client is connected to appended.
// KILL_COMMAND "-" kills nothing and drops the client's connection instead (to check this test
// against a single real ZooKeeper: the same reconnect and setWatches path, without a crash).
// The modes "worker" and "set" are this test's own child processes.
'use strict';
const { execFileSync, spawn } = require('child_process');
const net = require('net');
const zookeeper = require('node-zookeeper-client');
const { CreateMode, Event, Exception } = zookeeper;

const SESSION_TIMEOUT_MS = 10000;
const WATCH_TIMEOUT_MS = 5000;
const INCREMENTS = 20;

const workerProcesses = []; // the lock workers, killed if this process fails
class Failure extends Error {}
function check(condition, message) {
    if (!condition) throw new Failure(message);
}

function connect(hosts, timeoutMs = 10000) {
    const client = zookeeper.createClient(hosts, {
        sessionTimeout: SESSION_TIMEOUT_MS, spinDelay: 200, retries: 0,
    });
    return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
            client.close();
            reject(new Failure(`no connection to ${hosts} within ${timeoutMs} ms`));
        }, timeoutMs);
        client.once('connected', () => {
            clearTimeout(timer);
            resolve(client);
        });
        client.connect();
    });
}

// A client method as a promise of its callback's results (an array), rejected with its error.
function call(client, method, ...args) {
    return new Promise((resolve, reject) => {
        client[method](...args, (error, ...results) => (error ? reject(error) : resolve(results)));
    });
}

function txn(transaction) {
    return new Promise((resolve) => transaction.commit((error, results) => resolve({ error, results })));
}

async function expectError(promise, code, what) {
    let error = null;
    try {
        await promise;
    } catch (e) {
        error = e;
    }
    check(error !== null, `${what}: succeeded, expected ${Exception.create(code)}`);
    check(typeof error.getCode === 'function' && error.getCode() === code,
        `${what}: ${error}, expected ${Exception.create(code)}`);
}

// A one-shot watcher and the promise of its event.
function watch() {
    let watcher;
    const fired = new Promise((resolve) => {
        watcher = resolve;
    });
    return { watcher, fired };
}

function within(promise, ms, what) {
    let timer;
    return Promise.race([
        promise,
        new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Failure(`${what}: nothing within ${ms} ms`)), ms);
        }),
    ]).finally(() => clearTimeout(timer));
}

async function expectEvent(w, type, path, what) {
    const event = await within(w.fired, WATCH_TIMEOUT_MS, what);
    check(event.getType() === type && event.getPath() === path,
        `${what}: got ${event}, expected ${Event.create({ type, path, state: 3 }).getName()} on ${path}`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const hex = (buffer) => Buffer.from(buffer).toString('hex');
const isZero = (buffer) => Buffer.from(buffer).every((b) => b === 0);

function closeClient(client) {
    return new Promise((resolve) => {
        const timer = setTimeout(resolve, 3000);
        client.once('disconnected', () => {
            clearTimeout(timer);
            resolve();
        });
        client.close();
    });
}

async function basics(root, hosts) {
    const client = await connect(hosts.join(','));
    check(!isZero(client.getSessionId()), 'connected without a session id');
    // The other client is on another node (on a single server, the same one).
    const other = await connect(hosts[1]);
    check(hex(other.getSessionId()) !== hex(client.getSessionId()), 'two clients share a session');
    console.log(`ok: connected to ${hosts.join(',')} (session ${hex(client.getSessionId())})`);

    const [created] = await call(client, 'create', root, Buffer.from('root'), CreateMode.PERSISTENT);
    check(created === root, `create returned ${created}`);
    const parent = `${root}/parent`;
    await call(client, 'create', parent, CreateMode.PERSISTENT);
    await expectError(call(other, 'create', parent, CreateMode.PERSISTENT), Exception.NODE_EXISTS,
        'a second create of the same path');
    const [data0, stat0] = await call(other, 'getData', root);
    check(data0.toString() === 'root' && stat0.version === 0 && isZero(stat0.ephemeralOwner),
        `getData of a new persistent node: ${data0} version ${stat0.version}`);

    // getChildren with a watcher; another client creates an ephemeral-sequential child.
    const childWatch = watch();
    const [children0] = await call(client, 'getChildren', parent, childWatch.watcher);
    check(children0.length === 0, `a new parent has children ${children0}`);
    const [eph] = await call(other, 'create', `${parent}/eph-`, Buffer.from('e'),
        CreateMode.EPHEMERAL_SEQUENTIAL);
    check(/\/eph-\d{10}$/.test(eph), `an ephemeral-sequential node named ${eph}`);
    await expectEvent(childWatch, Event.NODE_CHILDREN_CHANGED, parent,
        'getChildren watch after another client created a child');
    const [eph2] = await call(other, 'create', `${parent}/eph-`, CreateMode.EPHEMERAL_SEQUENTIAL);
    check(eph2 > eph && eph2.length === eph.length, `sequence numbers not increasing: ${eph}, ${eph2}`);
    const [children1] = await call(client, 'getChildren', parent);
    check(JSON.stringify(children1.sort()) === JSON.stringify([eph, eph2].map((p) => p.slice(parent.length + 1))),
        `getChildren after two creates: ${children1}`);
    const [ephData, ephStat] = await call(client, 'getData', eph);
    check(ephData.toString() === 'e' && hex(ephStat.ephemeralOwner) === hex(other.getSessionId()),
        `the ephemeral node's owner ${hex(ephStat.ephemeralOwner)}, expected ${hex(other.getSessionId())}`);
    console.log(`ok: persistent and ephemeral-sequential nodes (${eph}), getChildren watch fired`);

    // getData and exists with watchers: fired by the other client's setData, create and remove.
    const node = `${root}/node`;
    await call(client, 'create', node, Buffer.from('v0'), CreateMode.PERSISTENT);
    const dataWatch = watch();
    const [v0, s0] = await call(client, 'getData', node, dataWatch.watcher);
    check(v0.toString() === 'v0', `getData: ${v0}`);
    const missing = `${root}/later`;
    const createdWatch = watch();
    const [none] = await call(client, 'exists', missing, createdWatch.watcher);
    check(none === null, 'exists of a missing node returned a stat');
    const deletedWatch = watch();
    const [existing] = await call(client, 'exists', eph2, deletedWatch.watcher);
    check(existing !== null, 'exists of an existing node returned null');

    const [s1] = await call(other, 'setData', node, Buffer.from('v1'), s0.version);
    check(s1.version === s0.version + 1, `setData's version ${s1.version} after ${s0.version}`);
    await expectEvent(dataWatch, Event.NODE_DATA_CHANGED, node, 'getData watch after setData');
    await call(other, 'create', missing, CreateMode.PERSISTENT);
    await expectEvent(createdWatch, Event.NODE_CREATED, missing, 'exists watch on a missing node');
    await call(other, 'remove', eph2, -1);
    await expectEvent(deletedWatch, Event.NODE_DELETED, eph2, 'exists watch on a removed node');
    console.log('ok: getData and exists watches fired by another client (changed, created, deleted)');

    // Versions: a stale setData or remove is BAD_VERSION and changes nothing.
    await expectError(call(client, 'setData', node, Buffer.from('stale'), s0.version),
        Exception.BAD_VERSION, 'setData with a stale version');
    await expectError(call(client, 'remove', node, s0.version), Exception.BAD_VERSION,
        'remove with a stale version');
    const [v1, s1b] = await call(client, 'getData', node);
    check(v1.toString() === 'v1' && s1b.version === s1.version, `after refused writes: ${v1} v${s1b.version}`);
    const [s2] = await call(client, 'setData', node, Buffer.from('v2'), s1.version);
    check(s2.version === s1.version + 1, `setData with the current version: version ${s2.version}`);
    await call(client, 'remove', node, s2.version);
    const [gone] = await call(other, 'exists', node);
    check(gone === null, 'a removed node still exists');
    await expectError(call(client, 'getData', node), Exception.NO_NODE, 'getData of a removed node');
    await expectError(call(client, 'remove', `${root}/nothing`, -1), Exception.NO_NODE,
        'remove of a missing node');
    await expectError(call(client, 'remove', root, -1), Exception.NOT_EMPTY, 'remove of a parent');
    console.log('ok: setData and remove with versions, BAD_VERSION, NO_NODE, NOT_EMPTY');

    // A transaction that commits, and one that fails and leaves nothing. (The library sends a
    // version 0 in a transaction as -1, any version: the versions used here are above 0.)
    const t = `${root}/txn`;
    const committed = await txn(client.transaction()
        .create(t, Buffer.from('a'), CreateMode.PERSISTENT)
        .setData(t, Buffer.from('b'), -1)
        .check(t, 1)
        .create(`${t}/child`, CreateMode.PERSISTENT));
    check(!committed.error, `transaction: ${committed.error}`);
    check(committed.results.length === 4 && committed.results[0].path === t &&
        committed.results[1].stat.version === 1, `transaction results ${JSON.stringify(committed.results)}`);
    const [tData, tStat] = await call(other, 'getData', t);
    check(tData.toString() === 'b' && tStat.version === 1 && tStat.numChildren === 1,
        `after the transaction: ${tData} version ${tStat.version}, ${tStat.numChildren} children`);
    const [tStat2] = await call(client, 'setData', t, Buffer.from('b'), 1);
    check(tStat2.version === 2, `setData after the transaction: version ${tStat2.version}`);
    const failed = await txn(client.transaction()
        .create(`${t}2`, CreateMode.PERSISTENT)
        .setData(t, Buffer.from('c'), 1)
        .remove(`${t}/child`, -1));
    check(failed.error && failed.error.getCode() === Exception.BAD_VERSION,
        `a transaction with a stale version: ${failed.error}, expected BAD_VERSION`);
    const codes = (failed.results || []).map((r) => r.err);
    check(JSON.stringify(codes) === JSON.stringify([Exception.OK, Exception.BAD_VERSION,
        Exception.RUNTIME_INCONSISTENCY]), `the failed transaction's results: ${JSON.stringify(failed.results)}`);
    const [rolledBack] = await call(other, 'exists', `${t}2`);
    const [tData2] = await call(other, 'getData', t);
    const [kept] = await call(other, 'exists', `${t}/child`);
    check(rolledBack === null && tData2.toString() === 'b' && kept !== null,
        'a failed transaction left some of its writes');
    console.log('ok: transaction committed (create, setData, check, create) and one rolled back');

    // Closing a session removes its ephemeral nodes, and a watcher sees it.
    const ephWatch = watch();
    const [ephStill] = await call(client, 'exists', eph, ephWatch.watcher);
    check(ephStill !== null, 'the ephemeral node vanished while its session lived');
    await closeClient(other);
    await expectEvent(ephWatch, Event.NODE_DELETED, eph, 'exists watch on an ephemeral node whose session closed');
    const [childrenAfter] = await call(client, 'getChildren', parent);
    check(childrenAfter.length === 0, `ephemeral children left after their session closed: ${childrenAfter}`);
    console.log('ok: a closed session\'s ephemeral node removed, its watcher fired');
    return client;
}

// Spawns the lock workers, one per node, starts them together and checks the counter.
async function lockCounter(client, root, hosts) {
    const counter = `${root}/counter`;
    const ready = `${root}/ready`;
    const go = `${root}/go`;
    await call(client, 'create', counter, Buffer.from('0'), CreateMode.PERSISTENT);
    await call(client, 'create', ready, CreateMode.PERSISTENT);
    await call(client, 'create', `${root}/lock`, CreateMode.PERSISTENT);
    const outputs = [];
    const exits = hosts.map((host, i) => new Promise((resolve) => {
        const child = spawn(process.execPath, [__filename, 'worker', host, root, String(i + 1)],
            { stdio: ['ignore', 'pipe', 'inherit'] });
        workerProcesses.push(child);
        let out = '';
        child.stdout.on('data', (d) => { out += d; });
        child.on('exit', (code) => {
            outputs[i] = out;
            resolve(code);
        });
    }));
    // Wait until every worker announced itself, then let them all go at once.
    const deadline = Date.now() + 15000;
    for (;;) {
        const w = watch();
        const [children] = await call(client, 'getChildren', ready, w.watcher);
        if (children.length === hosts.length) break;
        check(Date.now() < deadline, `only ${children.length} lock workers ready`);
        await within(w.fired, deadline - Date.now(), 'lock workers ready').catch(() => {});
    }
    await call(client, 'create', go, CreateMode.PERSISTENT);
    const codes = await within(Promise.all(exits), 20000, 'lock workers finishing');
    let total = 0;
    let waits = 0;
    codes.forEach((code, i) => {
        check(code === 0, `lock worker ${i + 1} exited ${code}`);
        const report = JSON.parse(outputs[i]);
        check(report.increments === INCREMENTS, `worker ${i + 1} made ${report.increments} increments`);
        total += report.increments;
        waits += report.waits;
    });
    const [value, stat] = await call(client, 'getData', counter);
    check(total > 0 && Number(value.toString()) === total && stat.version === total,
        `counter ${value} (version ${stat.version}) after ${total} locked increments: lost updates`);
    check(waits > 0, 'no worker ever waited on its predecessor: the lock was never contended');
    const [left] = await call(client, 'getChildren', `${root}/lock`);
    check(left.length === 0, `lock nodes left behind: ${left}`);
    console.log(`ok: lock recipe on ${hosts.length} nodes: ${total} increments, none lost ` +
        `(${waits} waits on a predecessor's watch)`);
}

async function worker(host, root, id) {
    const client = await connect(host);
    const dir = `${root}/lock`;
    let waits = 0;

    async function lock() {
        const [mine] = await call(client, 'create', `${dir}/lock-`, CreateMode.EPHEMERAL_SEQUENTIAL);
        const name = mine.slice(dir.length + 1);
        for (;;) {
            const [children] = await call(client, 'getChildren', dir);
            children.sort();
            const at = children.indexOf(name);
            check(at >= 0, `worker ${id}: its lock node ${mine} vanished`);
            if (at === 0) return mine;
            const predecessor = `${dir}/${children[at - 1]}`;
            const w = watch();
            const [stat] = await call(client, 'exists', predecessor, w.watcher);
            if (stat === null) continue;
            waits += 1;
            const event = await within(w.fired, 15000, `worker ${id}: watch on ${predecessor}`);
            check(event.getType() === Event.NODE_DELETED, `worker ${id}: predecessor event ${event}`);
        }
    }

    await call(client, 'create', `${root}/ready/w${id}`, CreateMode.EPHEMERAL);
    const goWatch = watch();
    const [started] = await call(client, 'exists', `${root}/go`, goWatch.watcher);
    if (started === null) {
        const event = await within(goWatch.fired, 15000, `worker ${id}: waiting for the start`);
        check(event.getType() === Event.NODE_CREATED, `worker ${id}: start event ${event}`);
    }
    let increments = 0;
    for (let i = 0; i < INCREMENTS; i++) {
        const held = await lock();
        // Inside: nobody else may be; the read-modify-write is not versioned, only locked.
        try {
            await call(client, 'create', `${root}/inside`, Buffer.from(String(id)), CreateMode.EPHEMERAL);
        } catch (e) {
            throw new Failure(`worker ${id}: two holders of the lock at once (${e})`);
        }
        const [value] = await call(client, 'getData', `${root}/counter`);
        await call(client, 'setData', `${root}/counter`, Buffer.from(String(Number(value.toString()) + 1)), -1);
        increments += 1;
        await call(client, 'remove', `${root}/inside`, -1);
        await call(client, 'remove', held, -1);
    }
    process.stdout.write(JSON.stringify({ increments, waits }));
    await closeClient(client);
}

// Sets a node's data through any of the hosts, retrying until a node serves it (an election may
// be under way). Run while the main process is blocked, so its client sees the change only after
// it has reconnected.
async function setter(hosts, path, data) {
    const deadline = Date.now() + 10000;
    const client = await connect(hosts, 10000);
    for (;;) {
        try {
            await call(client, 'setData', path, Buffer.from(data), -1);
            break;
        } catch (e) {
            if (Date.now() > deadline) throw e;
            await sleep(100);
        }
    }
    await closeClient(client);
}

// The server's mode ("leader", "follower", "standalone") from the four-letter word srvr.
function mode4lw(host) {
    const [address, port] = host.split(':');
    return new Promise((resolve) => {
        let out = '';
        const socket = net.connect(Number(port), address, () => socket.end('srvr'));
        socket.setTimeout(2000, () => socket.destroy());
        socket.on('data', (d) => { out += d; });
        socket.on('error', () => {});
        socket.on('close', () => resolve((/Mode: (\w+)/.exec(out) || [null, 'mode unknown'])[1]));
    });
}

async function failover(root, hosts, killCommand) {
    const client = await connect(hosts.join(','));
    const session = hex(client.getSessionId());
    const states = [];
    client.on('state', (s) => states.push(String(s)));
    const port = client.connectionManager.socket.remotePort;
    const node = hosts.findIndex((h) => Number(h.split(':')[1]) === port) + 1;
    check(node > 0, `connected to port ${port}, not one of ${hosts}`);
    const survivors = hosts.filter((_, i) => i !== node - 1);

    const eph = `${root}/fo-eph`;
    const dataNode = `${root}/fo-data`;
    const later = `${root}/fo-later`;
    const dir = `${root}/fo-dir`;
    await call(client, 'create', eph, Buffer.from('mine'), CreateMode.EPHEMERAL);
    await call(client, 'create', dataNode, Buffer.from('before'), CreateMode.PERSISTENT);
    await call(client, 'create', dir, CreateMode.PERSISTENT);
    // Three watches set before the crash: one whose node changes while the client is away (fires
    // at setWatches), two whose nodes change after the reconnect (set again by setWatches).
    const dataWatch = watch();
    await call(client, 'getData', dataNode, dataWatch.watcher);
    const laterWatch = watch();
    const [none] = await call(client, 'exists', later, laterWatch.watcher);
    check(none === null, `${later} exists already`);
    const childWatch = watch();
    await call(client, 'getChildren', dir, childWatch.watcher);

    const reconnected = new Promise((resolve) => {
        client.once('disconnected', () => client.once('connected', resolve));
    });
    const role = await mode4lw(hosts[node - 1]);
    const started = Date.now();
    // Blocking on purpose: the client cannot notice the crash, nor reconnect, until the other
    // process has changed the node, so the change falls between its connections.
    if (killCommand !== '-') execFileSync('/bin/sh', ['-c', `${killCommand} ${node}`], { stdio: 'inherit' });
    execFileSync(process.execPath, [__filename, 'set', survivors.join(','), dataNode, 'while-away'],
        { stdio: 'inherit', timeout: 12000 });
    if (killCommand === '-') client.connectionManager.socket.destroy();
    await within(reconnected, 15000, 'reconnecting after the node was lost');
    const took = (Date.now() - started) / 1000;
    check(hex(client.getSessionId()) === session,
        `reconnected with session ${hex(client.getSessionId())}, not ${session}`);
    check(!states.includes(String(zookeeper.State.EXPIRED)), `the session expired: ${states}`);
    await expectEvent(dataWatch, Event.NODE_DATA_CHANGED, dataNode,
        'a getData watch set before the crash, its node changed while disconnected (setWatches)');

    const other = await connect(survivors.join(','));
    const [stat] = await call(other, 'exists', eph);
    check(stat !== null && hex(stat.ephemeralOwner) === session,
        `the ephemeral node after the reconnect: ${stat && hex(stat.ephemeralOwner)}, expected ${session}`);
    await call(other, 'create', later, CreateMode.PERSISTENT);
    await expectEvent(laterWatch, Event.NODE_CREATED, later,
        'an exists watch set before the crash, node created after the reconnect (setWatches)');
    await call(other, 'create', `${dir}/x`, CreateMode.PERSISTENT);
    await expectEvent(childWatch, Event.NODE_CHILDREN_CHANGED, dir,
        'a getChildren watch set before the crash, child created after the reconnect (setWatches)');
    await call(client, 'setData', eph, Buffer.from('after'), -1);
    const [after] = await call(other, 'getData', eph);
    check(after.toString() === 'after', `a write after the reconnect reads ${after}`);

    const drops = states.filter((s) => s === String(zookeeper.State.DISCONNECTED)).length;
    check(drops === 1, `the client lost its connection ${drops} times, not once: ${states}`);

    const ephWatch = watch();
    await call(other, 'exists', eph, ephWatch.watcher);
    await closeClient(client);
    await expectEvent(ephWatch, Event.NODE_DELETED, eph, 'the ephemeral node after its session closed');
    console.log(`ok: session ${session} kept across ${killCommand === '-' ? 'a dropped connection'
        : `node ${node}'s crash (${role})`} (reconnected in ${took.toFixed(1)} s): ephemeral node kept, ` +
        'three watches set before it fired after it');
    return other;
}

async function removeTree(client, path) {
    const [children] = await call(client, 'getChildren', path);
    for (const child of children) await removeTree(client, `${path}/${child}`);
    await call(client, 'remove', path, -1);
}

async function main() {
    const [killCommand, ...hosts] = process.argv.slice(3);
    check(hosts.length === 3, 'usage: node_client.js main KILL_COMMAND HOST:PORT HOST:PORT HOST:PORT');
    const root = `/node-client-${process.pid}-${Date.now()}`;
    const started = Date.now();
    const client = await basics(root, hosts);
    await lockCounter(client, root, hosts);
    const other = await failover(root, hosts, killCommand);
    await closeClient(client);
    await removeTree(other, root);
    const [removed] = await call(other, 'exists', root);
    check(removed === null, `${root} left after removing its tree`);
    await closeClient(other);
    console.log(`node-zookeeper-client: all checks passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

const mode = process.argv[2];
const run = mode === 'main' ? main()
    : mode === 'worker' ? worker(process.argv[3], process.argv[4], process.argv[5])
    : mode === 'set' ? setter(process.argv[3], process.argv[4], process.argv[5])
    : Promise.reject(new Failure(`unknown mode ${mode}`));
function fail(message) {
    console.error(message);
    for (const child of workerProcesses) child.kill('SIGKILL');
    process.exit(1);
}
const guard = setTimeout(() => fail(`FAILED: ${mode} timed out`), mode === 'main' ? 30000 : 25000);
run.then(() => {
    clearTimeout(guard);
    process.exit(0);
}, (e) => {
    fail(`FAILED (${mode}): ${e instanceof Failure ? e.message : e.stack || e}`);
});
