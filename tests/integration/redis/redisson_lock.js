// A Redisson-style reentrant lock on ioredis (issue 22), shared by pubsub_locks_test.js and
// failover_pubsub.js: RedissonLock's published algorithm, since Redisson itself (Java) is not
// installable here. A hash of owner -> hold count with PEXPIRE, taken and released by Lua (the
// take answers the holder's PTTL when refused), the release PUBLISHed from the unlock script on
// redisson_lock__channel:{name}, waiters subscribed to it and waiting for the message or the
// holder's lease to run out (Redisson's fallback for a message that never comes).
//
//   const { RedissonLike, LOCK_SCRIPT, UNLOCK_MESSAGE } = require('./redisson_lock');
//   const c = new RedissonLike(port, clientId[, ioredisOptions]);
//   const sent = await c.lock(name, leaseMs, thread);  // when the acquiring request was sent
//   await c.unlock(name, leaseMs, thread);             // 1 released, 0 still held, null not held
//   c.close();
'use strict';
const Redis = require('ioredis');

const LOCK_SCRIPT = `
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])`;
const UNLOCK_SCRIPT = `
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`;
const UNLOCK_MESSAGE = '0';

// One client process's view, as Redisson has it: a command connection, a subscriber connection
// shared by its waiters, and per lock name the waiters to wake. ioredisOptions (optional) are
// added to both connections' options. wakes counts how the waits ended: by a release message or
// by the holder's lease running out.
class RedissonLike {
    constructor(port, id, ioredisOptions = {}) {
        this.redis = new Redis({ port, maxRetriesPerRequest: 5, ...ioredisOptions });
        this.sub = new Redis({ port, maxRetriesPerRequest: 5, ...ioredisOptions });
        this.id = id;
        this.wakers = new Map();  // channel -> set of resolve functions
        this.wakes = { message: 0, timer: 0 };
        this.sub.on('message', (channel) => {
            for (const wake of this.wakers.get(channel) || []) wake(true);
        });
    }
    // Resolves, holding the lock, to the time (Date.now()) just before the request that took it
    // was sent: the lease runs out no earlier than that time + leaseMs.
    async lock(name, leaseMs, thread) {
        const key = name;
        const channel = `redisson_lock__channel:{${name}}`;
        const owner = `${this.id}:${thread}`;
        let sent = Date.now();
        let ttl = await this.redis.eval(LOCK_SCRIPT, 1, key, leaseMs, owner);
        if (ttl === null) return sent;
        await this.sub.subscribe(channel);
        try {
            for (;;) {
                sent = Date.now();
                ttl = await this.redis.eval(LOCK_SCRIPT, 1, key, leaseMs, owner);
                if (ttl === null) return sent;
                // Wait for the release message, or the holder's lease to run out.
                await new Promise((resolve) => {
                    const set = this.wakers.get(channel) || new Set();
                    this.wakers.set(channel, set);
                    const done = (byMessage) => {
                        set.delete(done);
                        clearTimeout(timer);
                        this.wakes[byMessage ? 'message' : 'timer']++;
                        resolve();
                    };
                    const timer = setTimeout(done, Math.max(Number(ttl), 1), false);
                    set.add(done);
                });
            }
        } finally {
            if (!this.wakers.get(channel)?.size) await this.sub.unsubscribe(channel);
        }
    }
    async unlock(name, leaseMs, thread) {
        const owner = `${this.id}:${thread}`;
        return this.redis.eval(UNLOCK_SCRIPT, 2, name, `redisson_lock__channel:{${name}}`,
                               UNLOCK_MESSAGE, leaseMs, owner);
    }
    close() {
        this.redis.disconnect();
        this.sub.disconnect();
    }
}

module.exports = { RedissonLike, LOCK_SCRIPT, UNLOCK_SCRIPT, UNLOCK_MESSAGE };
