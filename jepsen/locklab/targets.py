"""The systems a lab cell runs its recipe against (docs/lock-lab.md "The targets"), each started
fresh in the lab's server namespaces for every cell, and what each fault does to it.

Every server process runs with the clock shim preloaded (jepsen/clockshift), so the server-clock
fault can move its wall clock, and in a process group of its own, so kill -9 takes all of it
(PostgreSQL's backends included).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

from locklab import netns
from locklab.clockshift import ClockFile

RAFT_PORT, CLIENT_PORT, ADMIN_PORT, REDIS_PORT, PG_PORT = 7000, 7100, 7200, 7300, 7400
ZK_PORT = 7500
REDIS_SERVER_PORT, POSTGRES_PORT = 6379, 5432
ZOOKEEPER_PORT, ZOOKEEPER_QUORUM_PORT, ZOOKEEPER_ELECTION_PORT = 2181, 2888, 3888
ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"  # Debian's zookeeper package (3.8)
PG_BIN = "/usr/lib/postgresql/15/bin"
PG_USER = "lab"  # role and database of the lab's PostgreSQL; raftlock's pg port accepts any


class SetupError(Exception):
    """A target could not be started: the cell is an error, not a result."""


class Process:
    """One server process in a namespace, its log and its clock file."""

    def __init__(self, name, ns, cmd, log_path, clock, user=None):
        self.name, self.ns, self.cmd, self.log_path, self.clock = name, ns, cmd, log_path, clock
        self.user = user
        self.popen = None

    def start(self, extra_args=()):
        env = ["env", *self.clock.env(Target.clockshift_lib)]
        drop = (["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--init-groups"]
                if self.user else [])
        with open(self.log_path, "ab") as log:
            # `ip netns exec`, `env` and `setpriv` all exec, so the pid is the server's.
            self.popen = subprocess.Popen(
                ["ip", "netns", "exec", self.ns, *env, *drop, *self.cmd, *extra_args],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def kill(self):
        """kill -9 of the whole process group."""
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait()

    def stop(self, grace_s=5):
        if not self.alive():
            self.kill()  # reaps a group whose leader died
            return
        os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


def wait_until(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise SetupError(f"{what} within {seconds} s")


class Target:
    """Base: `slots` server processes; subclasses say how to start them and which one a server
    fault hits."""

    name = None
    clockshift_lib = None  # set by the lab: the built libraftlock-clockshift.so

    def __init__(self, cell_dir, params, rng):
        self.dir, self.params, self.rng = cell_dir, params, rng
        self.procs = {}  # slot -> Process

    def slot_dir(self, slot):
        path = os.path.join(self.dir, f"s{slot}")
        os.makedirs(path, exist_ok=True)
        return path

    def add(self, slot, name, cmd, user=None):
        clock = ClockFile(os.path.join(self.dir, f"clock-s{slot}"))
        proc = Process(name, netns.server_ns(slot), cmd,
                       os.path.join(self.slot_dir(slot), f"{name}.log"), clock, user)
        self.procs[slot] = proc
        return proc

    def stop(self):
        for proc in self.procs.values():
            proc.stop()
            proc.clock.close()

    def ips(self):
        return [netns.server_ip(s) for s in self.procs]

    # The faults' hooks. Each returns a detail dict for nemesis.jsonl.
    def kill_victim(self):
        """The slot server-kill and server-clock hit: the leader or primary by default."""
        raise NotImplementedError

    def server_kill(self):
        slot = self.kill_victim()
        self.procs[slot].kill()
        return slot, {"slot": slot, "server": self.procs[slot].name}

    def server_restart(self, slot):
        self.procs[slot].start()
        return {"slot": slot}


class Ensemble(Target):
    """Three servers that elect a leader; the server faults hit the leader (any server while
    there is none)."""

    slots = (1, 2, 3)

    def leads(self, slot):
        """Whether the server in `slot` says it is the leader (False when it does not answer)."""
        raise NotImplementedError

    def leader(self):
        for s in self.slots:
            if self.procs[s].alive() and self.leads(s):
                return s
        return None

    def kill_victim(self):
        leader = self.leader()
        return leader if leader is not None else self.rng.choice(self.slots)


class Raftlock(Ensemble):
    """Three raftlockd, every port on each."""

    name = "raftlock"

    def start(self, build_dir):
        cluster_id = self.rng.randrange(1, 2**31)
        members = []
        for s in self.slots:
            members += ["--member", f"{s}={netns.server_ip(s)}:{RAFT_PORT}"]
        ttl_ms = self.params["ttl_ms"]
        for s in self.slots:
            ip = netns.server_ip(s)
            self.add(s, "raftlockd", [
                os.path.join(build_dir, "cli/raftlockd"), "--id", str(s),
                "--cluster-id", str(cluster_id), *members,
                "--client-listen", f"{ip}:{CLIENT_PORT}", "--admin-listen", f"{ip}:{ADMIN_PORT}",
                "--redis-listen", f"{ip}:{REDIS_PORT}", "--pg-listen", f"{ip}:{PG_PORT}",
                "--zk-listen", f"{ip}:{ZK_PORT}",
                # A pg connection's session is its lease: the same TTL as every other family's.
                "--pg-session-timeout-ms", str(ttl_ms),
                "--data-dir", os.path.join(self.slot_dir(s), "data")]).start()
        wait_until(lambda: self.leader() is not None, 20, "no raftlock leader")

    def status(self, slot):
        try:
            url = f"http://{netns.server_ip(slot)}:{ADMIN_PORT}/status"
            with urllib.request.urlopen(url, timeout=0.5) as r:
                return json.loads(r.read())
        except Exception:  # down, or cut off: no status
            return None

    def leads(self, slot):
        status = self.status(slot)
        return bool(status) and status.get("role") == "leader"

    def endpoints(self, family):
        port = CLIENT_PORT
        if family.startswith("redis"):
            port = REDIS_PORT
        elif family.startswith("sql"):
            port = PG_PORT
        elif family.startswith("zk"):
            port = ZK_PORT
        return [f"{netns.server_ip(s)}:{port}" for s in self.slots]

def redis_cmd(slot, durable):
    persistence = (["--appendonly", "yes", "--appendfsync", "always"] if durable else
                   ["--appendonly", "no"])
    return ["redis-server", "--bind", netns.server_ip(slot), "--port", str(REDIS_SERVER_PORT),
            "--protected-mode", "no", "--save", "", *persistence, "--daemonize", "no",
            # A replica's first sync (and a failed-over primary's resync) at once, not after 5 s.
            "--repl-diskless-sync-delay", "0"]


def redis_cli(slot, *args, timeout_s=2):
    try:
        done = subprocess.run(["redis-cli", "-h", netns.server_ip(slot), "-p",
                               str(REDIS_SERVER_PORT), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
        return done.stdout.strip()
    except subprocess.TimeoutExpired:
        return ""


class Redis(Target):
    """One durable primary: appendonly, fsync on every write."""

    name = "redis"

    def start_server(self, slot, durable=True, extra=()):
        proc = self.add(slot, "redis-server", redis_cmd(slot, durable) + ["--dir",
                                                                           self.slot_dir(slot)])
        proc.start(extra)
        wait_until(lambda: redis_cli(slot, "PING") == "PONG", 10, f"redis on slot {slot} silent")

    def start(self, _build_dir):
        self.start_server(1)

    def endpoints(self, _family):
        return [f"{ip}:{REDIS_SERVER_PORT}" for ip in self.ips()]

    def kill_victim(self):
        return 1


class RedisReplicated(Redis):
    """A primary and an asynchronous replica. server-kill is a failover, as Sentinel does it: the
    primary dies, the replica is promoted, and the old primary comes back as a replica of it."""

    name = "redis-replicated"

    def start(self, _build_dir):
        self.primary = 1
        self.start_server(1)
        self.start_server(2, extra=["--replicaof", netns.server_ip(1), str(REDIS_SERVER_PORT)])
        wait_until(lambda: "master_link_status:up" in redis_cli(2, "INFO", "replication"), 15,
                   "the replica did not sync")

    def kill_victim(self):
        return self.primary

    def server_kill(self):
        old = self.primary
        new = 2 if old == 1 else 1
        self.procs[old].kill()
        promoted = redis_cli(new, "REPLICAOF", "NO", "ONE")
        self.primary = new
        return old, {"slot": old, "server": "redis-server", "failover_to": new,
                     "promote": promoted}

    def server_restart(self, slot):
        self.procs[slot].start(["--replicaof", netns.server_ip(self.primary),
                                str(REDIS_SERVER_PORT)])
        return {"slot": slot, "replica_of": self.primary}


class Redis5(Redis):
    """Five independent servers for Redlock, without persistence (restarted empty)."""

    name = "redis5"
    slots = (1, 2, 3, 4, 5)

    def start(self, _build_dir):
        for s in self.slots:
            self.start_server(s, durable=False)

    def kill_victim(self):
        # A server that holds the lock now: losing it is what can hand a majority to another.
        holding = [s for s in self.slots
                   if redis_cli(s, "EXISTS", self.params["lock"], timeout_s=0.5) == "1"]
        return self.rng.choice(holding or list(self.slots))


class Postgres(Target):
    """One PostgreSQL 15, fsync on, initialised once per lab run and copied for each cell."""

    name = "postgres"
    template = None  # made by prepare_template()

    @classmethod
    def prepare_template(cls, work_dir):
        path = os.path.join(work_dir, "pg-template")
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.makedirs(path)
        shutil.chown(path, "postgres", "postgres")
        run_as_postgres([f"{PG_BIN}/initdb", "-D", path, "-U", "postgres", "--auth=trust",
                         "--no-sync"])
        with open(os.path.join(path, "pg_hba.conf"), "a") as f:
            f.write(f"host all all {netns.NET}.0/24 trust\n")
        # -l: the server must not inherit our stdout pipe, or run() waits for it forever.
        run_as_postgres([f"{PG_BIN}/pg_ctl", "-D", path, "-w", "-l", os.path.join(path, "template.log"), "-o",
                         f"-c listen_addresses='' -c unix_socket_directories={path}", "start"])
        try:
            psql = ["/usr/bin/psql", "-h", path, "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-c"]
            run_as_postgres(psql + [f"CREATE ROLE {PG_USER} LOGIN SUPERUSER"])
            run_as_postgres(psql + [f"CREATE DATABASE {PG_USER} OWNER {PG_USER}"])
        finally:
            run_as_postgres([f"{PG_BIN}/pg_ctl", "-D", path, "-w", "stop"])
        cls.template = path

    def start(self, _build_dir):
        data = os.path.join(self.slot_dir(1), "pgdata")
        shutil.copytree(self.template, data, symlinks=True)
        subprocess.run(["chown", "-R", "postgres:postgres", self.slot_dir(1)], check=True)
        os.chmod(data, 0o700)
        ip = netns.server_ip(1)
        self.add(1, "postgres", [f"{PG_BIN}/postgres", "-D", data, "-c", f"listen_addresses={ip}",
                                 "-c", f"port={POSTGRES_PORT}", "-c",
                                 f"unix_socket_directories={data}", "-c", "fsync=on"],
                 user="postgres").start()
        wait_until(lambda: pg_ready(ip), 20, "PostgreSQL did not accept connections")

    def endpoints(self, _family):
        return [f"{netns.server_ip(1)}:{POSTGRES_PORT}"]

    def kill_victim(self):
        return 1


def run_as_postgres(cmd):
    done = subprocess.run(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                           *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise SetupError(f"{' '.join(cmd)}: {done.stdout.strip()[-500:]}")


def pg_ready(ip):
    done = subprocess.run([f"{PG_BIN}/pg_isready", "-h", ip, "-p", str(POSTGRES_PORT), "-t", "1"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return done.returncode == 0


class Zookeeper(Ensemble):
    """A three-server ZooKeeper 3.8 ensemble (Debian's), each server's transaction log fsynced
    (ZooKeeper's default). tickTime 500 ms, so that the lab's 2 s session timeout is inside
    ZooKeeper's bounds (2 to 20 ticks) and a session expires within a tick of its timeout, as
    raftlock's do; syncLimit 5 ticks (2.5 s) is how long the leader waits for a silent follower,
    comparable to raftlock's election timeout."""

    name = "zookeeper"
    TICK_MS = 500

    def start(self, _build_dir):
        servers = [f"server.{s}={netns.server_ip(s)}:{ZOOKEEPER_QUORUM_PORT}:"
                   f"{ZOOKEEPER_ELECTION_PORT}" for s in self.slots]
        for s in self.slots:
            data = os.path.join(self.slot_dir(s), "data")
            os.makedirs(data, exist_ok=True)
            with open(os.path.join(data, "myid"), "w") as f:
                f.write(f"{s}\n")
            config = os.path.join(self.slot_dir(s), "zoo.cfg")
            with open(config, "w") as f:
                f.write("\n".join([
                    f"tickTime={self.TICK_MS}", "initLimit=20", "syncLimit=5",
                    f"dataDir={data}", f"clientPort={ZOOKEEPER_PORT}",
                    f"clientPortAddress={netns.server_ip(s)}", "admin.enableServer=false",
                    "4lw.commands.whitelist=ruok,srvr", "maxClientCnxns=0", *servers, ""]))
            self.add(s, "zookeeper", [
                "java", "-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto",
                "-cp", f"/etc/zookeeper/conf:{ZOOKEEPER_JAR}",
                f"-Dzookeeper.log.dir={self.slot_dir(s)}", "-Dzookeeper.root.logger=INFO,CONSOLE",
                "-Dlog4j.configuration=file:/etc/zookeeper/conf/log4j.properties",
                "org.apache.zookeeper.server.quorum.QuorumPeerMain", config]).start()
        wait_until(lambda: self.leader() is not None, 60, "no ZooKeeper leader")
        wait_until(lambda: all(self.mode(s) in ("leader", "follower") for s in self.slots), 30,
                   "not every ZooKeeper server joined the ensemble")

    def mode(self, slot):
        """The server's Mode line of `srvr` (leader, follower), or None when it does not answer."""
        try:
            with socket.create_connection((netns.server_ip(slot), ZOOKEEPER_PORT),
                                          timeout=0.5) as conn:
                conn.settimeout(0.5)
                conn.sendall(b"srvr")
                answer = b""
                while chunk := conn.recv(4096):
                    answer += chunk
        except OSError:
            return None
        for line in answer.decode(errors="replace").splitlines():
            if line.startswith("Mode: "):
                return line[len("Mode: "):].strip()
        return None

    def leads(self, slot):
        return self.mode(slot) == "leader"

    def endpoints(self, _family):
        return [f"{netns.server_ip(s)}:{ZOOKEEPER_PORT}" for s in self.slots]


TARGETS = {t.name: t for t in (Raftlock, Redis, RedisReplicated, Redis5, Postgres, Zookeeper)}
