// Apache Curator's recipes, unmodified, on a ZooKeeper ensemble (issue 21): raftlock's three-node
// cluster in CI (curator_test.sh), a real ZooKeeper when checking this program itself.
//
//   java Recipes mutex CONNECT ID ITERATIONS PROCESSES
//       InterProcessMutex on ROOT/mutex: ITERATIONS times, holding the lock, read the counter znode
//       ROOT/counter, add one, write it back. PROCESSES of these run at once (each waits for the
//       others at a gate first); an ephemeral ROOT/inside marks the holder, so two holders at once
//       fail at once, and a lost update shows in the final count.
//   java Recipes counter CONNECT EXPECTED
//       the counter must equal EXPECTED (> 0): no increment lost; no lock node left behind.
//   java Recipes recipes CONNECT_A CONNECT_B
//       two clients (A and B): InterProcessReadWriteLock, InterProcessSemaphoreV2 with two leases,
//       InterProcessMultiLock over two mutexes, LeaderLatch with two participants.
//   java Recipes failover KILL_COMMAND HOLDER_CONNECT OTHER_CONNECT
//       a client connected to HOLDER_CONNECT's first host (hosts are tried in the order given) holds
//       an InterProcessMutex and an ephemeral node; KILL_COMMAND (run with sh -c) kills that host.
//       The session must survive (SUSPENDED then RECONNECTED, never LOST, same session id), the
//       lock node and the ephemeral node stay the holder's, a client on OTHER_CONNECT cannot take
//       the lock until the holder releases it, and then it gets it. The holder's client also
//       waits, through the failover, for a second lock the other client holds: its watch on the
//       other's lock node must be restored on the new node (setWatches), so the other's release
//       wakes it at once.
//
// ROOT is /curator (-Dcurator.root=/other to change it). Exit status 0 when every check passed;
// otherwise "FAILED: ..." on stderr and status 1.
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.utils.ZookeeperFactory;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ConnectStringParser;
import org.apache.zookeeper.client.HostProvider;
import org.apache.zookeeper.client.StaticHostProvider;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.Stat;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;

public class Recipes {
    static final String ROOT = System.getProperty("curator.root", "/curator");
    static final int SESSION_TIMEOUT_MS = 15000;
    static final int MODE_DEADLINE_S = 90;

    static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    static void check(boolean condition, String failure) {
        if (!condition) {
            throw new Failure(failure);
        }
    }

    static void ok(String what) {
        System.out.println("  ok: " + what);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String string(byte[] b) {
        return b == null ? "(null)" : new String(b, StandardCharsets.UTF_8);
    }

    // ---- clients ----

    // Tries the hosts in the order given (ZooKeeper's own provider shuffles them), so the failover
    // check knows which node its holder is on.
    static final class InOrderHostProvider implements HostProvider {
        private final List<InetSocketAddress> hosts;
        private int next = 0;
        private int triedSinceConnected = 0;

        InOrderHostProvider(String connectString) {
            hosts = new ArrayList<>(new ConnectStringParser(connectString).getServerAddresses());
        }

        @Override
        public int size() {
            return hosts.size();
        }

        @Override
        public synchronized InetSocketAddress next(long spinDelay) {
            if (triedSinceConnected >= hosts.size()) {
                triedSinceConnected = 0;
                if (spinDelay > 0) {
                    try {
                        Thread.sleep(spinDelay);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
            InetSocketAddress host = hosts.get(next);
            next = (next + 1) % hosts.size();
            triedSinceConnected++;
            InetSocketAddress resolved = new InetSocketAddress(host.getHostString(), host.getPort());
            return resolved.isUnresolved() ? host : resolved;
        }

        @Override
        public synchronized void onConnected() {
            triedSinceConnected = 0;
        }

        @Override
        public boolean updateServerList(Collection<InetSocketAddress> servers, InetSocketAddress current) {
            return false;
        }
    }

    // ZooKeeper with the address it is connected to made visible (a protected method).
    static final class Zk extends ZooKeeper {
        Zk(String connectString, int sessionTimeout, Watcher watcher, boolean canBeReadOnly,
                HostProvider hosts, ZKClientConfig config) throws IOException {
            super(connectString, sessionTimeout, watcher, canBeReadOnly, hosts,
                    config != null ? config : new ZKClientConfig());
        }

        SocketAddress remote() {
            return testableRemoteSocketAddress();
        }

        List<String> dataWatches() {
            return getDataWatches();
        }
    }

    static final class Factory implements ZookeeperFactory {
        private final boolean inOrder;

        Factory(boolean inOrder) {
            this.inOrder = inOrder;
        }

        @Override
        public ZooKeeper newZooKeeper(String connectString, int sessionTimeout, Watcher watcher,
                boolean canBeReadOnly) throws Exception {
            return newZooKeeper(connectString, sessionTimeout, watcher, canBeReadOnly, null);
        }

        @Override
        public ZooKeeper newZooKeeper(String connectString, int sessionTimeout, Watcher watcher,
                boolean canBeReadOnly, ZKClientConfig config) throws Exception {
            HostProvider hosts = inOrder ? new InOrderHostProvider(connectString)
                    : new StaticHostProvider(new ConnectStringParser(connectString).getServerAddresses());
            return new Zk(connectString, sessionTimeout, watcher, canBeReadOnly, hosts, config);
        }
    }

    static CuratorFramework client(String connectString, boolean inOrder, List<ConnectionState> states)
            throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs(SESSION_TIMEOUT_MS)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(40, 250))
                .zookeeperFactory(new Factory(inOrder))
                .build();
        if (states != null) {
            client.getConnectionStateListenable().addListener((c, state) -> {
                synchronized (states) {
                    states.add(state);
                    states.notifyAll();
                }
            });
        }
        client.start();
        check(client.blockUntilConnected(15, SECONDS), "could not connect to " + connectString + " within 15 s");
        return client;
    }

    static long sessionId(CuratorFramework client) throws Exception {
        return client.getZookeeperClient().getZooKeeper().getSessionId();
    }

    static String remote(CuratorFramework client) throws Exception {
        SocketAddress address = ((Zk) client.getZookeeperClient().getZooKeeper()).remote();
        if (address instanceof InetSocketAddress) {
            InetSocketAddress a = (InetSocketAddress) address;
            return a.getAddress().getHostAddress() + ":" + a.getPort();
        }
        return String.valueOf(address);
    }

    // One thread: Curator's locks belong to the thread that acquired them.
    static final class Actor implements AutoCloseable {
        private final ExecutorService executor;

        Actor(String name) {
            executor = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, name);
                t.setDaemon(true);
                return t;
            });
        }

        <T> Future<T> submit(Callable<T> task) {
            return executor.submit(task);
        }

        <T> T run(Callable<T> task) throws Exception {
            return get(submit(task), 30);
        }

        void run(ThrowingRunnable task) throws Exception {
            run(() -> {
                task.run();
                return null;
            });
        }

        @Override
        public void close() {
            executor.shutdownNow();
        }
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    static <T> T get(Future<T> future, long seconds) throws Exception {
        try {
            return future.get(seconds, SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception) {
                throw (Exception) e.getCause();
            }
            throw e;
        } catch (TimeoutException e) {
            throw new Failure("a step did not finish within " + seconds + " s");
        }
    }

    // ---- mutex: processes incrementing a counter under InterProcessMutex ----

    static void mutex(String connect, String id, int iterations, int processes) throws Exception {
        check(iterations > 0 && processes > 0, "ITERATIONS and PROCESSES must be positive");
        String gate = ROOT + "/gate", counter = ROOT + "/counter", inside = ROOT + "/inside";
        try (CuratorFramework client = client(connect, false, null)) {
            String node = remote(client);
            // All processes start incrementing together, so they contend for the lock.
            client.create().creatingParentContainersIfNeeded().withMode(CreateMode.EPHEMERAL)
                    .forPath(gate + "/" + id);
            long deadline = System.nanoTime() + SECONDS.toNanos(30);
            int ready;
            while ((ready = client.getChildren().forPath(gate).size()) < processes) {
                check(System.nanoTime() < deadline, "mutex " + id + ": only " + ready + " of " + processes
                        + " processes at the gate after 30 s");
                Thread.sleep(10);
            }
            InterProcessMutex lock = new InterProcessMutex(client, ROOT + "/mutex");
            int made = 0;
            for (int i = 0; i < iterations; i++) {
                check(lock.acquire(30, SECONDS),
                        "mutex " + id + ": did not get the lock within 30 s (iteration " + i + ")");
                try {
                    check(lock.isOwnedByCurrentThread(), "mutex " + id + ": acquire() returned true but "
                            + "the lock is not owned by this thread");
                    try {
                        client.create().withMode(CreateMode.EPHEMERAL).forPath(inside, bytes(id));
                    } catch (KeeperException.NodeExistsException e) {
                        String other;
                        try {
                            other = string(client.getData().forPath(inside));
                        } catch (Exception e2) {
                            other = "?";
                        }
                        throw new Failure("mutex " + id + ": got the lock while process " + other
                                + " still held it (its marker " + inside + " exists)");
                    }
                    Stat stat = client.checkExists().forPath(counter);
                    String[] fields = stat == null ? new String[] {"0", "-", "0"}
                            : string(client.getData().forPath(counter)).split(" ");
                    check(fields.length == 3, "mutex " + id + ": counter holds '" + String.join(" ", fields) + "'");
                    long count = Long.parseLong(fields[0]) + 1;
                    long handoffs = Long.parseLong(fields[2])
                            + (fields[1].equals("-") || fields[1].equals(id) ? 0 : 1);
                    byte[] data = bytes(count + " " + id + " " + handoffs);
                    if (stat == null) {
                        client.create().creatingParentContainersIfNeeded().forPath(counter, data);
                    } else {
                        client.setData().forPath(counter, data);
                    }
                    made++;
                    client.delete().forPath(inside);
                } finally {
                    lock.release();
                }
            }
            check(made == iterations, "mutex " + id + ": made " + made + " of " + iterations + " increments");
            check(!lock.isAcquiredInThisProcess(), "mutex " + id + ": the lock is still held after the last release");
            System.out.println("mutex " + id + " (on " + node + "): " + made + " increments under the lock");
        }
    }

    static void counter(String connect, long expected) throws Exception {
        check(expected > 0, "EXPECTED must be positive");
        String counter = ROOT + "/counter";
        try (CuratorFramework client = client(connect, false, null)) {
            check(client.checkExists().forPath(counter) != null, "no counter node " + counter + ": no increment was made");
            String[] fields = string(client.getData().forPath(counter)).split(" ");
            long count = Long.parseLong(fields[0]);
            check(count == expected, "the counter is " + count + " after " + expected
                    + " increments under the lock: " + (expected - count) + " updates lost");
            ok("counter " + count + " == " + expected + " increments (the lock passed between processes "
                    + fields[2] + " times)");
            List<String> left = client.checkExists().forPath(ROOT + "/mutex") == null ? List.of()
                    : client.getChildren().forPath(ROOT + "/mutex");
            check(left.isEmpty(), "lock nodes left behind after every process released and closed: " + left);
            ok("no lock node left under " + ROOT + "/mutex");
        }
    }

    // ---- recipes: read-write lock, semaphore, multi-lock, leader latch ----

    static void readWriteLock(CuratorFramework a, CuratorFramework b) throws Exception {
        String path = ROOT + "/rwlock";
        InterProcessReadWriteLock readerA = new InterProcessReadWriteLock(a, path);
        InterProcessReadWriteLock readerB = new InterProcessReadWriteLock(b, path);
        InterProcessReadWriteLock writer = new InterProcessReadWriteLock(b, path);
        try (Actor r1 = new Actor("reader-1"); Actor r2 = new Actor("reader-2"); Actor w = new Actor("writer")) {
            check(r1.run(() -> readerA.readLock().acquire(10, SECONDS)), "reader 1 did not get a free read lock");
            check(r2.run(() -> readerB.readLock().acquire(10, SECONDS)),
                    "reader 2 did not get the read lock while reader 1 held it (readers share it)");
            ok("InterProcessReadWriteLock: two readers hold the read lock at once");
            check(!w.run(() -> writer.writeLock().acquire(500, MILLISECONDS)),
                    "the writer got the write lock while two readers held the read lock");
            Future<Boolean> writing = w.submit(() -> writer.writeLock().acquire(20, SECONDS));
            Thread.sleep(300);
            check(!writing.isDone(), "the writer's acquire returned while two readers held the read lock");
            r1.run(() -> readerA.readLock().release());
            Thread.sleep(300);
            check(!writing.isDone(), "the writer's acquire returned while reader 2 still held the read lock");
            r2.run(() -> readerB.readLock().release());
            check(get(writing, 20), "the writer did not get the write lock after both readers released");
            ok("InterProcessReadWriteLock: the writer waited for both readers, then got the lock");
            check(!r1.run(() -> readerA.readLock().acquire(500, MILLISECONDS)),
                    "a reader got the read lock while the writer held the write lock");
            w.run(() -> writer.writeLock().release());
            check(r1.run(() -> readerA.readLock().acquire(10, SECONDS)),
                    "a reader did not get the read lock after the writer released");
            r1.run(() -> readerA.readLock().release());
            ok("InterProcessReadWriteLock: a reader waited for the writer");
        }
    }

    static void semaphore(CuratorFramework a, CuratorFramework b) throws Exception {
        String path = ROOT + "/semaphore";
        InterProcessSemaphoreV2 semA = new InterProcessSemaphoreV2(a, path, 2);
        InterProcessSemaphoreV2 semB = new InterProcessSemaphoreV2(b, path, 2);
        InterProcessSemaphoreV2 semC = new InterProcessSemaphoreV2(b, path, 2);
        Lease first = semA.acquire(10, SECONDS);
        check(first != null, "InterProcessSemaphoreV2: the first of two leases was refused");
        Lease second = semB.acquire(10, SECONDS);
        check(second != null, "InterProcessSemaphoreV2: the second of two leases was refused");
        Collection<String> holders = semA.getParticipantNodes();
        check(holders.size() == 2, "InterProcessSemaphoreV2: 2 leases held but participants are " + holders);
        Lease third = semC.acquire(500, MILLISECONDS);
        if (third != null) {
            semC.returnLease(third);
        }
        check(third == null, "InterProcessSemaphoreV2: a third lease was granted while both of two were held");
        ok("InterProcessSemaphoreV2: two leases of two granted, a third acquire timed out");
        try (Actor waiter = new Actor("semaphore-waiter")) {
            Future<Lease> waiting = waiter.submit(() -> semC.acquire(20, SECONDS));
            Thread.sleep(300);
            check(!waiting.isDone(), "InterProcessSemaphoreV2: a third acquire returned while both leases were held");
            semA.returnLease(first);
            Lease handed = get(waiting, 20);
            check(handed != null, "InterProcessSemaphoreV2: the waiting acquire did not get the returned lease");
            holders = semA.getParticipantNodes();
            check(holders.size() == 2, "InterProcessSemaphoreV2: 2 leases held but participants are " + holders);
            semB.returnLease(second);
            semC.returnLease(handed);
        }
        // Curator lists the leases with getChildren, which fails NONODE once the emptied container
        // is gone: raftlock deletes it with its last child, ZooKeeper's container manager within
        // a minute (docs/zookeeper-mode.md). Either way no lease is left.
        try {
            holders = semA.getParticipantNodes();
        } catch (KeeperException.NoNodeException e) {
            holders = List.of();
        }
        check(holders.isEmpty(), "InterProcessSemaphoreV2: every lease returned but participants are " + holders);
        ok("InterProcessSemaphoreV2: a returned lease went to the waiting acquire; all returned");
    }

    static void multiLock(CuratorFramework a, CuratorFramework b) throws Exception {
        String pathA = ROOT + "/multi/a", pathB = ROOT + "/multi/b";
        InterProcessMultiLock both = new InterProcessMultiLock(a, List.of(pathA, pathB));
        InterProcessMutex otherA = new InterProcessMutex(b, pathA);
        InterProcessMutex otherB = new InterProcessMutex(b, pathB);
        try (Actor x = new Actor("multi"); Actor y = new Actor("single")) {
            check(x.run(() -> both.acquire(10, SECONDS)), "InterProcessMultiLock: refused over two free mutexes");
            check(!y.run(() -> otherA.acquire(500, MILLISECONDS)),
                    "InterProcessMultiLock: another client got mutex a while the multi-lock held it");
            check(!y.run(() -> otherB.acquire(500, MILLISECONDS)),
                    "InterProcessMultiLock: another client got mutex b while the multi-lock held it");
            ok("InterProcessMultiLock: holds both mutexes");
            x.run(() -> both.release());
            check(y.run(() -> otherB.acquire(10, SECONDS)),
                    "InterProcessMultiLock: mutex b was not free after the multi-lock's release");
            check(!x.run(() -> both.acquire(1, SECONDS)),
                    "InterProcessMultiLock: acquired while another client held mutex b");
            check(y.run(() -> otherA.acquire(5, SECONDS)),
                    "InterProcessMultiLock: mutex a stayed held after the multi-lock failed to get b");
            y.run(() -> {
                otherA.release();
                otherB.release();
            });
            check(x.run(() -> both.acquire(10, SECONDS)), "InterProcessMultiLock: refused after the other released");
            x.run(() -> both.release());
            ok("InterProcessMultiLock: all or nothing (a failed acquire gave mutex a back)");
        }
    }

    static void leaderLatch(CuratorFramework a, CuratorFramework b) throws Exception {
        String path = ROOT + "/leader";
        LeaderLatch one = new LeaderLatch(a, path, "one");
        LeaderLatch two = new LeaderLatch(b, path, "two");
        one.start();
        two.start();
        try {
            long deadline = System.nanoTime() + SECONDS.toNanos(10);
            while (!one.hasLeadership() && !two.hasLeadership()) {
                check(System.nanoTime() < deadline, "LeaderLatch: no leader among two participants after 10 s");
                Thread.sleep(20);
            }
            Thread.sleep(300); // a second leader would show by now
            check(one.hasLeadership() != two.hasLeadership(), "LeaderLatch: both participants are leaders");
            LeaderLatch leader = one.hasLeadership() ? one : two;
            LeaderLatch follower = leader == one ? two : one;
            check(one.getParticipants().size() == 2, "LeaderLatch: participants " + one.getParticipants());
            check(one.getLeader().getId().equals(leader.getId()) && two.getLeader().getId().equals(leader.getId()),
                    "LeaderLatch: getLeader() disagrees with hasLeadership() (" + leader.getId() + ")");
            ok("LeaderLatch: exactly one leader of two (" + leader.getId() + ")");
            leader.close();
            check(follower.await(10, SECONDS),
                    "LeaderLatch: leadership was not handed to " + follower.getId() + " after the leader closed");
            check(!leader.hasLeadership(), "LeaderLatch: a closed latch still has leadership");
            check(follower.getLeader().getId().equals(follower.getId()),
                    "LeaderLatch: getLeader() is " + follower.getLeader().getId() + " after the hand-over");
            check(follower.getParticipants().size() == 1, "LeaderLatch: participants " + follower.getParticipants());
            ok("LeaderLatch: closing the leader handed leadership to " + follower.getId());
        } finally {
            for (LeaderLatch latch : List.of(one, two)) {
                if (latch.getState() == LeaderLatch.State.STARTED) {
                    latch.close();
                }
            }
        }
    }

    static void recipes(String connectA, String connectB) throws Exception {
        try (CuratorFramework a = client(connectA, false, null); CuratorFramework b = client(connectB, false, null)) {
            System.out.println("recipes: client A on " + remote(a) + ", client B on " + remote(b));
            readWriteLock(a, b);
            semaphore(a, b);
            multiLock(a, b);
            leaderLatch(a, b);
        }
    }

    // ---- failover: a lock holder's node is killed ----

    static void failover(String killCommand, String holderConnect, String otherConnect) throws Exception {
        List<ConnectionState> states = new ArrayList<>();
        InetSocketAddress firstHost = new ConnectStringParser(holderConnect).getServerAddresses().get(0);
        String first = firstHost.getHostString() + ":" + firstHost.getPort();
        String eph = ROOT + "/failover/eph";
        try (CuratorFramework holder = client(holderConnect, true, states);
                CuratorFramework other = client(otherConnect, false, null);
                Actor holderThread = new Actor("holder");
                Actor waiterThread = new Actor("waiter");
                Actor contenderThread = new Actor("contender")) {
            check(remote(holder).equals(first), "the holder connected to " + remote(holder) + ", not " + first);
            long session = sessionId(holder);
            int timeout = holder.getZookeeperClient().getZooKeeper().getSessionTimeout();
            holder.create().creatingParentContainersIfNeeded().withMode(CreateMode.EPHEMERAL).forPath(eph, bytes("mine"));
            InterProcessMutex lock = new InterProcessMutex(holder, ROOT + "/failover/lock");
            check(holderThread.run(() -> lock.acquire(10, SECONDS)), "the holder did not get a free lock");
            Collection<String> participants = lock.getParticipantNodes();
            check(participants.size() == 1, "lock participants " + participants + ", expected the holder's one");
            String lockNode = participants.iterator().next();
            Stat stat = other.checkExists().forPath(lockNode);
            check(stat != null && stat.getEphemeralOwner() == session,
                    "the lock node " + lockNode + " is not the holder's ephemeral: " + stat);
            InterProcessMutex contender = new InterProcessMutex(other, ROOT + "/failover/lock");
            ok(String.format("holder (session 0x%x, timeout %d ms) on %s holds %s", session, timeout, first, lockNode));

            // The holder's client waits for lock2, held by the other client: a watch on its node.
            InterProcessMutex blocker = new InterProcessMutex(other, ROOT + "/failover/lock2");
            InterProcessMutex waiter = new InterProcessMutex(holder, ROOT + "/failover/lock2");
            check(contenderThread.run(() -> blocker.acquire(10, SECONDS)), "the other client did not get a free lock2");
            String blockerNode = blocker.getParticipantNodes().iterator().next();
            Future<Boolean> waiting = waiterThread.submit(() -> waiter.acquire(60, SECONDS));
            Zk holderZk = (Zk) holder.getZookeeperClient().getZooKeeper();
            long watchDeadline = System.nanoTime() + SECONDS.toNanos(10);
            while (!holderZk.dataWatches().contains(blockerNode)) {
                check(!waiting.isDone(), "the holder's acquire of lock2 returned while the other client held it");
                check(System.nanoTime() < watchDeadline, "the holder set no watch on " + blockerNode
                        + " within 10 s (its data watches: " + holderZk.dataWatches() + ")");
                Thread.sleep(10);
            }
            ok("the holder's client waits for lock2 with a watch on " + blockerNode);

            long started = System.nanoTime();
            int killed = new ProcessBuilder("sh", "-c", killCommand).inheritIO().start().waitFor();
            check(killed == 0, "the kill command '" + killCommand + "' exited " + killed);
            synchronized (states) {
                long deadline = System.nanoTime() + SECONDS.toNanos(30);
                while (!(states.contains(ConnectionState.SUSPENDED)
                        && states.lastIndexOf(ConnectionState.RECONNECTED) > states.indexOf(ConnectionState.SUSPENDED))
                        && !states.contains(ConnectionState.LOST)) {
                    long left = deadline - System.nanoTime();
                    check(left > 0, "the holder did not reconnect within 30 s of the kill (states " + states + ")");
                    states.wait(Math.max(1, left / 1000000));
                }
                check(!states.contains(ConnectionState.LOST), "the holder's session was lost: states " + states);
            }
            double took = (System.nanoTime() - started) / 1e9;
            check(sessionId(holder) == session,
                    String.format("reconnected with session 0x%x, not 0x%x", sessionId(holder), session));
            check(!remote(holder).equals(first), "the holder is still connected to the killed " + first);
            ok(String.format("session 0x%x kept: %s, now on %s (%.1f s after the kill)",
                    session, states, remote(holder), took));

            stat = other.checkExists().forPath(eph);
            check(stat != null && stat.getEphemeralOwner() == session, "the holder's ephemeral node after the failover: " + stat);
            stat = other.checkExists().forPath(lockNode);
            check(stat != null && stat.getEphemeralOwner() == session,
                    "the holder's lock node " + lockNode + " after the failover: " + stat);
            check(holderThread.run(() -> lock.isOwnedByCurrentThread()), "the holder no longer owns its lock");
            check(!contenderThread.run(() -> contender.acquire(1, SECONDS)),
                    "another client took the lock while its holder's session lives");
            ok("the lock node and the ephemeral node are still the holder's; a contender timed out");
            check(!waiting.isDone(), "the holder's acquire of lock2 returned while the other client held it");
            contenderThread.run(() -> blocker.release());
            Boolean woken;
            try {
                woken = get(waiting, 10);
            } catch (Failure e) {
                throw new Failure("the holder's wait for lock2 was not woken within 10 s of the other's release: "
                        + "its watch on " + blockerNode + " was not restored after the reconnect (setWatches)");
            }
            check(woken, "the holder did not get lock2 after the other released it");
            waiterThread.run(() -> waiter.release());
            ok("the holder's watch survived the failover: the release of lock2 woke its wait at once");
            holder.setData().forPath(eph, bytes("after"));
            check(string(other.getData().forPath(eph)).equals("after"), "the holder's write after the failover is not seen");
            holderThread.run(() -> lock.release());
            check(contenderThread.run(() -> contender.acquire(10, SECONDS)),
                    "the lock was not handed to the contender after the holder released it");
            contenderThread.run(() -> contender.release());
            ok("after the holder's release the contender got the lock");
            holder.close();
            check(other.checkExists().forPath(eph) == null, "the ephemeral node outlived its closed session");
            ok("closing the holder's session removed its ephemeral node");
        }
    }

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "";
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(SECONDS.toMillis(MODE_DEADLINE_S));
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("FAILED: " + mode + ": did not finish within " + MODE_DEADLINE_S + " s");
            Runtime.getRuntime().halt(1);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        int status = 0;
        try {
            switch (mode) {
                case "mutex":
                    check(args.length == 5, "usage: mutex CONNECT ID ITERATIONS PROCESSES");
                    mutex(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
                    break;
                case "counter":
                    check(args.length == 3, "usage: counter CONNECT EXPECTED");
                    counter(args[1], Long.parseLong(args[2]));
                    break;
                case "recipes":
                    check(args.length == 3, "usage: recipes CONNECT_A CONNECT_B");
                    recipes(args[1], args[2]);
                    break;
                case "failover":
                    check(args.length == 4, "usage: failover KILL_COMMAND HOLDER_CONNECT OTHER_CONNECT");
                    failover(args[1], args[2], args[3]);
                    break;
                default:
                    throw new Failure("usage: Recipes mutex|counter|recipes|failover ...");
            }
        } catch (Failure e) {
            System.err.println("FAILED: " + e.getMessage());
            status = 1;
        } catch (Throwable e) {
            System.err.println("FAILED: " + mode + ": " + e);
            e.printStackTrace();
            status = 1;
        }
        System.out.flush();
        System.err.flush();
        // Curator's and ZooKeeper's threads must not keep a failed run alive.
        Runtime.getRuntime().halt(status);
    }
}
