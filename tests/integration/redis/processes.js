// The Node lock tests' workers as separate OS processes (issue 22: "several processes increment a
// shared counter under the lock"), each with its own connections, its own library module state
// (simple-redis-mutex's subscriber is one per process) and its own event loop, so that nothing a
// worker does is ordered with another's by sharing a process: only the server orders them.
//
// A test file is both the parent and its children: the parent calls runProcesses(__filename, ...)
// and each child, started as `node FILE` with RAFTLOCK_TEST_WORKER in its environment, finds its
// task with workerTask() and calls serve(). The messages (over Node's IPC channel):
//   child  -> parent  {ready}           set up (connected); waits for {go}
//   parent -> child   {go}              every child is ready and the parent's onReady() ran
//   child  -> parent  {share: x}        relayed as {shared: x} to every other child
//   parent -> child   {report}          the run is overdue: answer {status: ctx.status()}
//   child  -> parent  {result: r}       last; the child then exits
//   child  -> parent  {error: message}  the child failed; it then exits 1
//
//   const { runProcesses, workerTask, serve, monotonicMs } = require('./processes');
//   if (workerTask()) serve(async (task, ctx) => { ...; await ctx.ready(); ...; return result; });
//   else main();  // ... const results = await runProcesses(__filename, 6, { kind: 'x' });
'use strict';
const { fork } = require('child_process');

const ENV = 'RAFTLOCK_TEST_WORKER';

// CLOCK_MONOTONIC in milliseconds (fractional): one clock for every process of the machine, so
// times taken in different children compare (Date.now() is whole milliseconds and can step).
const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

// In a child: its task, with `index` (0..count-1) and `count` added; null in the parent.
function workerTask() {
    return process.env[ENV] ? JSON.parse(process.env[ENV]) : null;
}

// In the parent: forks `count` children of `script`, gives child i the task {...task, index: i,
// count} (task may be a function: task(i)), and resolves to their results in index order once
// every child delivered one. Options:
//   onReady   async () => void, run when every child is ready, before they are told to go
//   timeoutMs from the start; then every unfinished child is asked for its status (1 s to
//             answer), all are killed, and the promise rejects with err.statuses: index -> status
//             (undefined: it did not answer)
//   args      the children's command-line arguments (default: the parent's own)
// A child that fails or exits without a result rejects the promise (the others are killed).
function runProcesses(script, count, task, { onReady, timeoutMs, args } = {}) {
    console.assert(count > 0, 'runProcesses: no children');
    return new Promise((resolve, reject) => {
        const results = new Array(count);
        const statuses = {};
        let readyCount = 0;
        let resultCount = 0;
        let settled = false;
        let timer = null;
        const children = [];
        const finish = (err) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
            if (err) reject(err);
            else resolve(results);
        };
        for (let index = 0; index < count; index++) {
            const mine = typeof task === 'function' ? task(index) : task;
            const env = { ...process.env, [ENV]: JSON.stringify({ ...mine, index, count }) };
            const child = fork(script, args || process.argv.slice(2), { env });
            children.push(child);
            let delivered = false;
            child.on('message', (m) => {
                if (m.ready !== undefined) {
                    if (++readyCount === count) {
                        Promise.resolve(onReady && onReady())
                            .then(() => children.forEach((c) => c.send({ go: true })))
                            .catch(finish);
                    }
                } else if (m.share !== undefined) {
                    for (const other of children) {
                        if (other !== child && other.connected) other.send({ shared: m.share });
                    }
                } else if (m.status !== undefined) {
                    statuses[index] = m.status;
                } else if (m.result !== undefined) {
                    delivered = true;
                    results[index] = m.result;
                    if (++resultCount === count) finish(null);
                } else if (m.error !== undefined) {
                    delivered = true;
                    finish(new Error(`worker process ${index}: ${m.error}`));
                }
            });
            child.on('exit', (code, signal) => {
                if (!delivered) {
                    finish(new Error(`worker process ${index} exited (${signal || code}) ` +
                                     'without a result'));
                }
            });
        }
        if (timeoutMs !== undefined) {
            timer = setTimeout(() => {
                const waiting = children.filter((c, i) => results[i] === undefined && c.connected);
                waiting.forEach((c) => c.send({ report: true }));
                setTimeout(() => {
                    const err = new Error(`${waiting.length} worker process(es) did not finish ` +
                                          `within ${timeoutMs} ms`);
                    err.statuses = statuses;
                    finish(err);
                }, 1000);
            }, timeoutMs);
        }
    });
}

// In a child: runs body(task, ctx), sends its result (JSON-serializable; undefined is sent as
// null) and exits. ctx:
//   ready()         resolves when the parent says go (call it once set up)
//   share(x)        sends x to every other child
//   onShared(fn)    fn(x) for each x another child shared
//   status          a function the parent's {report} is answered with (set it; default null)
function serve(body) {
    const task = workerTask();
    console.assert(task !== null, 'serve: not a worker process');
    let go = null;
    const started = new Promise((resolve) => { go = resolve; });
    const listeners = [];
    const ctx = {
        ready: () => {
            process.send({ ready: true });
            return started;
        },
        share: (x) => process.send({ share: x }),
        onShared: (fn) => listeners.push(fn),
        status: () => null,
    };
    // The parent gone (failed, or killed at the test's timeout): nothing will read the result,
    // and a worker left running could go on holding locks.
    process.on('disconnect', () => process.exit(1));
    process.on('message', (m) => {
        if (m.go) go();
        else if (m.shared !== undefined) listeners.forEach((fn) => fn(m.shared));
        else if (m.report) process.send({ status: ctx.status() });
    });
    // (exit at once after the last message: some libraries keep connections open)
    Promise.resolve()
        .then(() => body(task, ctx))
        .then((result) => process.send({ result: result === undefined ? null : result },
                                       () => process.exit(0)))
        .catch((e) => process.send({ error: String((e && e.stack) || e) }, () => process.exit(1)));
}

module.exports = { runProcesses, workerTask, serve, monotonicMs };
