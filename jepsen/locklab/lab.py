"""jepsen/lab: every family of distributed lock, under the same faults, side by side
(docs/lock-lab.md).

    jepsen/lab [--families F,...] [--targets T,...] [--faults X,...] [--time 60]
               [--cells FAMILY:TARGET:FAULT,...] [--expect FAMILY:TARGET:FAULT:METRIC=N|>N ...]

For each cell (family x target x fault) it starts the target fresh in the lab's namespaces, the
resource server, and --workers workers of the family's recipe; the nemesis injects the fault; then
raftlock-lab-check turns the resource's log into the cell's metrics. The report (table.md,
heatmap.png, timelines/, index.html) is written at the end. Exit status: 0 every cell valid and every
--expect met, 1 otherwise, 2 usage or setup error, 77 not root (the run is skipped).
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import traceback

from locklab import netns, report
from locklab.families import FAMILIES
from locklab.clockshift import ClockFile
from locklab.nemesis import FAULTS, Nemesis, monotonic_ns
from locklab.targets import TARGETS, ZOOKEEPER_JAR, Postgres, SetupError, Target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESOURCE_PORT = 7600
PYTHON = "/usr/bin/python3"  # Debian's, with redis-py and psycopg (scripts/deps.sh)
WORKER_PY = os.path.join(ROOT, "jepsen", "locklab", "worker.py")
WORKER_CPP = "jepsen/labworker/raftlock-lab-worker"
LOCK_NAME = "lab-lock"
CLIENT_FAULTS = ("client-pause", "client-partition", "client-clock")


def log(msg):
    print(f"lab: {msg}", flush=True)


class Worker:
    """One worker process in its own namespace, with a wall clock the lab can move."""

    def __init__(self, wid, cell_dir):
        self.id = wid
        self.ns = netns.worker_ns(wid)
        self.clock = ClockFile(os.path.join(cell_dir, f"clock-w{wid}"))
        self.log_path = os.path.join(cell_dir, f"worker{wid}.log")
        self.popen = None

    @property
    def pid(self):
        return self.popen.pid

    def start(self, cmd):
        env = ["env", *self.clock.env(Target.clockshift_lib)]
        with open(self.log_path, "ab") as out:
            self.popen = subprocess.Popen(["ip", "netns", "exec", self.ns, *env, *cmd],
                                          stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True)

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def stop(self):
        if self.popen is None:
            return
        if self.alive():
            os.killpg(self.popen.pid, signal.SIGCONT)
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self.clock.close()


def worker_command(args, family_name, family, wid, endpoints, resource, extra=()):
    common = ["--family", family_name, "--worker", str(wid), "--workers", str(args.workers),
              "--resource", resource, "--endpoints", ",".join(endpoints), "--lock", LOCK_NAME,
              "--ttl-ms", str(args.ttl_ms), "--work-ms", str(args.work_ms),
              "--time", f"{args.time:g}", "--seed", str(args.seed * 1000 + wid), *extra]
    if family.native:
        return [os.path.join(args.build, WORKER_CPP), *common]
    return [PYTHON, WORKER_PY, *common]


def run_python_step(args, family_name, family, endpoints, step):
    """--prepare or --final of the Python worker, from worker 1's namespace; its last line."""
    cmd = worker_command(args, family_name, family, 1, endpoints, "127.0.0.1:1", [step])
    done = subprocess.run(["ip", "netns", "exec", netns.worker_ns(1), *cmd],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60)
    if done.returncode != 0:
        raise SetupError(f"worker {step} failed: {done.stdout.strip()[-800:]}")
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def start_resource(cell_dir, fenced, origin_ns):
    address = f"{netns.RESOURCE_IP}:{RESOURCE_PORT}"
    cmd = [PYTHON, os.path.join(ROOT, "jepsen", "locklab", "resource.py"), "--listen", address,
           "--log", os.path.join(cell_dir, "resource.jsonl"), "--origin-ns", str(origin_ns)]
    if fenced:
        cmd.append("--fence")
    out = open(os.path.join(cell_dir, "resource.log"), "wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection((netns.RESOURCE_IP, RESOURCE_PORT), timeout=0.2).close()
            return proc, address
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    proc.kill()
    raise SetupError("the resource server did not start (see resource.log)")


def stop_process(proc, grace_s=5):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cell_name(family, target, fault):
    return f"{family}--{target}--{fault}"


class Cell:
    """One family x target x fault: runs it and returns its entry of results.json."""

    def __init__(self, args, family_name, target_name, fault, out_dir):
        self.args = args
        self.family_name, self.family = family_name, FAMILIES[family_name]
        self.target_name, self.fault = target_name, fault
        self.name = cell_name(family_name, target_name, fault)
        self.dir = os.path.join(out_dir, "cells", self.name)
        seed_text = f"{args.seed}:{self.name}"
        self.rng = random.Random(seed_text)
        self.entry = {"family": family_name, "target": target_name, "fault": fault,
                      "dir": os.path.relpath(self.dir, out_dir), "status": "error",
                      "invalid": [], "error": None, "faults_injected": 0,
                      "mutex_verdict": "n/a", "metrics": None}

    def params(self):
        return {"ttl_ms": self.args.ttl_ms, "lock": LOCK_NAME}

    def run(self):
        if os.path.isdir(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        target = TARGETS[self.target_name](self.dir, self.params(), self.rng)
        workers, resource, nemesis = {}, None, None
        started = time.monotonic()
        try:
            target.start(self.args.build)
            endpoints = target.endpoints(self.family_name)
            if self.family.prepare:
                run_python_step(self.args, self.family_name, self.family, endpoints, "--prepare")
            origin = monotonic_ns()
            resource, address = start_resource(self.dir, self.family.fenced, origin)
            workers = {w: Worker(w, self.dir) for w in range(1, self.args.workers + 1)}
            for w, worker in workers.items():
                worker.start(worker_command(self.args, self.family_name, self.family, w,
                                            endpoints, address))
            nemesis = Nemesis(self.fault, target, workers,
                              (netns.RESOURCE_IP, RESOURCE_PORT), origin,
                              time.monotonic() + self.args.time - self.args.heal,
                              self.args.ttl_ms / 1000, self.rng,
                              os.path.join(self.dir, "nemesis.jsonl"))
            nemesis.start()
            self.wait_for_workers(workers.values())
            nemesis.abort.set()
            nemesis.join()
            end_ns = monotonic_ns() - origin
            stop_process(resource)
            db_final = None
            if self.family.optimistic:
                line = run_python_step(self.args, self.family_name, self.family, endpoints,
                                       "--final")
                db_final = json.loads(line)
            self.finish(nemesis, end_ns, db_final)
        except SetupError as e:
            self.entry["error"] = str(e)
        except Exception:
            self.entry["error"] = traceback.format_exc()
        finally:
            if nemesis is not None and nemesis.is_alive():
                nemesis.abort.set()
                nemesis.join()
            for worker in workers.values():
                worker.stop()
            stop_process(resource)
            target.stop()
        self.entry["wall_s"] = round(time.monotonic() - started, 1)
        return self.entry

    def wait_for_workers(self, workers):
        """Workers end by themselves after --time; one that does not is stopped and noted."""
        deadline = time.monotonic() + self.args.time + 30
        for worker in workers:
            try:
                worker.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.entry["invalid"].append(f"worker {worker.id} did not end by itself")
                worker.stop()
            if worker.popen.returncode not in (0, None):
                self.entry["invalid"].append(
                    f"worker {worker.id} exited with status {worker.popen.returncode} "
                    f"(see worker{worker.id}.log)")

    def cell_json(self, nemesis, end_ns, db_final):
        faults = [{"start_ns": s, "stop_ns": e, "detail": d} for s, e, d in nemesis.windows]
        return {"family": self.family_name, "target": self.target_name, "fault": self.fault,
                "workers": self.args.workers, "ttl_ms": self.args.ttl_ms,
                "work_ms": self.args.work_ms, "time_s": self.args.time,
                "fenced": self.family.fenced, "optimistic": self.family.optimistic,
                "tokens": self.family.tokens, "origin_ns": 0, "end_ns": end_ns,
                "faults": faults, "fault_requested": self.fault != "none",
                "final_heal_ns": nemesis.final_heal_ns if self.fault != "none" else 0,
                "db_final": db_final}

    def finish(self, nemesis, end_ns, db_final):
        cell = self.cell_json(nemesis, end_ns, db_final)
        cell_path = os.path.join(self.dir, "cell.json")
        with open(cell_path, "w") as f:
            json.dump(cell, f, indent=1)
        self.entry["faults_injected"] = len(nemesis.windows)
        if nemesis.error:
            self.entry["error"] = "the nemesis failed:\n" + nemesis.error
            return
        history = os.path.join(self.dir, "history.jsonl")
        check = subprocess.run(
            [os.path.join(self.args.build, "jepsen/checker/raftlock-lab-check"), "--cell",
             cell_path, "--log", os.path.join(self.dir, "resource.jsonl"), "--sections",
             os.path.join(self.dir, "sections.tsv"), "--history", history],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if check.returncode not in (0, 1):
            self.entry["error"] = f"raftlock-lab-check: {check.stderr.strip()[-800:]}"
            return
        metrics = json.loads(check.stdout)  # sql-optimistic's db_final counted in, from cell.json
        self.entry["metrics"] = metrics
        self.entry["invalid"] += metrics.get("invalid", [])
        self.entry["status"] = "invalid" if self.entry["invalid"] else "valid"
        if self.family.tokens and self.fault not in CLIENT_FAULTS:
            self.entry["mutex_verdict"] = self.judge_history(history)

    def judge_history(self, history):
        if not os.path.exists(history) or os.path.getsize(history) == 0:
            return "n/a"
        done = subprocess.run(
            [os.path.join(self.args.build, "jepsen/checker/raftlock-check"), "--model", "mutex",
             "--format", "jsonl", "--html", os.path.join(self.dir, "timeline.html"), history],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with open(os.path.join(self.dir, "checker.txt"), "w") as f:
            f.write(done.stdout)
        return {0: "linearizable", 1: "not linearizable", 2: "unknown"}.get(done.returncode,
                                                                            "bad history")


def parse_list(text, known, what):
    items = list(known) if text == "all" else text.split(",")
    for item in items:
        if item not in known:
            raise SystemExit(f"lab: unknown {what} '{item}' (known: {', '.join(known)})")
    return items


def parse_cell(text):
    try:
        family, target, fault = text.split(":")
    except ValueError:
        raise SystemExit(f"lab: --cells '{text}': expected FAMILY:TARGET:FAULT")
    parse_list(family, FAMILIES, "family")
    parse_list(fault, FAULTS, "fault")
    if target not in FAMILIES[family].targets:
        raise SystemExit(f"lab: {family} does not run on '{target}' (it runs on "
                         f"{', '.join(FAMILIES[family].targets)})")
    return family, target, fault


def parse_expectation(text):
    """FAMILY:TARGET:FAULT:METRIC=N or METRIC>N; the cell must exist in the run."""
    try:
        family, target, fault, rule = text.split(":")
        op = ">" if ">" in rule else "="
        metric, value = rule.split(op)
        return {"cell": cell_name(family, target, fault), "metric": metric, "op": op,
                "value": int(value), "text": text}
    except ValueError:
        raise SystemExit(f"lab: --expect '{text}': expected FAMILY:TARGET:FAULT:METRIC=N|>N")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", default=None,
                   help="FAMILY:TARGET:FAULT,... instead of the cross product below")
    p.add_argument("--families", default="all")
    p.add_argument("--targets", default="all")
    p.add_argument("--faults", default="all")
    p.add_argument("--time", type=float, default=60, help="seconds a cell")
    p.add_argument("--heal", type=float, default=10, help="final fault-free seconds of a cell")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--ttl-ms", type=int, default=2000,
                   help="every lease: key TTL, session timeout, stale-row age")
    p.add_argument("--work-ms", type=int, default=50, help="delay between read and write")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--expect", action="append", default=[], type=parse_expectation)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--results", default=None)
    p.add_argument("--resume", action="store_true",
                   help="keep the cells --results already holds (same parameters) and run the rest")
    args = p.parse_args(argv)
    args.families = parse_list(args.families, FAMILIES, "family")
    args.targets = parse_list(args.targets, TARGETS, "target")
    args.faults = parse_list(args.faults, FAULTS, "fault")
    if not 1 <= args.workers <= netns.WORKER_SLOTS_MAX:
        p.error(f"--workers must be 1..{netns.WORKER_SLOTS_MAX}")
    if args.heal >= args.time:
        p.error("--heal must be shorter than --time")
    if args.resume and (args.results is None or args.seed is None):
        p.error("--resume needs the --results and --seed of the run it continues")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 2**31)
    return args


def matrix(args):
    """The cells to run: every family on every chosen target it applies to, every fault."""
    if args.cells:
        cells = [parse_cell(text) for text in args.cells.split(",")]
    else:
        cells = [(f, t, x) for f in args.families for t in FAMILIES[f].targets
                 if t in args.targets for x in args.faults]
    names = {cell_name(*c) for c in cells}
    for e in args.expect:
        if e["cell"] not in names:
            raise SystemExit(f"lab: --expect '{e['text']}' names a cell this run does not have")
    return cells


def check_environment(args, cells):
    if os.geteuid() != 0:
        log("skipped: network namespaces and nftables need root")
        sys.exit(77)
    needed = ["jepsen/checker/raftlock-lab-check", "jepsen/checker/raftlock-check",
              "jepsen/clockshift/libraftlock-clockshift.so"]
    if any(t == "raftlock" for _, t, _ in cells):
        needed.append("cli/raftlockd")
    if any(FAMILIES[f].native for f, _, _ in cells):
        needed.append(WORKER_CPP)
    for binary in needed:
        if not os.path.exists(os.path.join(args.build, binary)):
            log(f"{args.build}/{binary} is missing: build first (cmake --build {args.build})")
            sys.exit(2)
    tools = ["ip", "nft", "setpriv", "redis-server", "redis-cli", "gnuplot", PYTHON]
    if any(t == "zookeeper" for _, t, _ in cells):
        tools.append("java")
        if not os.path.exists(ZOOKEEPER_JAR):
            log(f"{ZOOKEEPER_JAR} is missing: scripts/deps.sh installs what the lab needs")
            sys.exit(2)
    for tool in tools:
        if shutil.which(tool) is None:
            log(f"'{tool}' is missing: scripts/deps.sh installs what the lab needs")
            sys.exit(2)


def check_expectations(args, results):
    by_name = {cell_name(c["family"], c["target"], c["fault"]): c for c in results["cells"]}
    failures = []
    for e in args.expect:
        metrics = by_name[e["cell"]].get("metrics") or {}
        got = metrics.get(e["metric"])
        met = got is not None and (got > e["value"] if e["op"] == ">" else got == e["value"])
        log(f"expect {e['text']}: {got} ({'met' if met else 'NOT met'})")
        if not met:
            failures.append(e["text"])
    return failures


def resumed(fresh, out_dir):
    """The results.json of an interrupted run in out_dir, continued: the same parameters, else
    the run refuses (a table must not mix cells of different lengths or seeds)."""
    path = os.path.join(out_dir, "results.json")
    if not os.path.exists(path):
        return fresh
    with open(path) as f:
        old = json.load(f)
    if old.get("params") != fresh["params"]:
        raise SystemExit(f"lab: --resume: {path} was run with {old.get('params')}, "
                         f"not {fresh['params']}")
    old.setdefault("resumed", []).append({"at": fresh["started"], "command": fresh["command"]})
    old.setdefault("wall_s", 0)
    return old


def summary_line(entry):
    m = entry.get("metrics") or {}
    if entry["status"] == "error":
        return f"error: {(entry['error'] or '').strip().splitlines()[-1][:200]}"
    text = (f"{m.get('sections')} sections, {m.get('overlaps')} overlaps, "
            f"{m.get('corruptions')} corruptions, {m.get('refused')} refused, "
            f"{m.get('acquisitions_per_s', 0):.1f}/s, {entry['faults_injected']} faults, "
            f"mutex model: {entry['mutex_verdict']}")
    if entry["invalid"]:
        text += f"; INVALID: {'; '.join(entry['invalid'])}"
    return text


def main(argv=None):
    args = parse_args(argv)
    cells = matrix(args)
    check_environment(args, cells)
    Target.clockshift_lib = os.path.join(args.build, "jepsen/clockshift/libraftlock-clockshift.so")
    out_dir = args.results or os.path.join(ROOT, "jepsen", "results",
                                           "lab-" + time.strftime("%Y%m%dT%H%M%S"))
    os.makedirs(out_dir, exist_ok=True)
    command = "jepsen/lab " + " ".join(sys.argv[1:] if argv is None else argv)
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": command,
               "params": {"time_s": args.time, "heal_s": args.heal, "workers": args.workers,
                          "ttl_ms": args.ttl_ms, "work_ms": args.work_ms, "seed": args.seed},
               "cells": [], "wall_s": 0}
    if args.resume:
        results = resumed(results, out_dir)
    done = {cell_name(c["family"], c["target"], c["fault"]) for c in results["cells"]}
    if done:
        log(f"resuming: {len(done)} cells already in {out_dir}")
    cells = [c for c in cells if cell_name(*c) not in done]
    log(f"{len(cells)} cells, {args.time:g} s each, seed {args.seed}, results in {out_dir}")
    started, wall_before = time.monotonic(), results["wall_s"]

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    try:
        netns.setup(args.workers)
        if any(t == "postgres" for _, t, _ in cells):
            Postgres.prepare_template(out_dir)
        for i, (family, target, fault) in enumerate(cells, 1):
            log(f"[{i}/{len(cells)}] {cell_name(family, target, fault)}")
            entry = Cell(args, family, target, fault, out_dir).run()
            log(f"    {summary_line(entry)}")
            results["cells"].append(entry)
            results["wall_s"] = round(wall_before + time.monotonic() - started, 1)
            with open(os.path.join(out_dir, "results.json"), "w") as f:
                json.dump(results, f, indent=1)
    except KeyboardInterrupt:
        log("interrupted; cleaning up")
        return 130
    except SetupError as e:
        log(f"setup failed: {e}")
        return 2
    finally:
        netns.teardown()
    written = report.write_report(out_dir)
    log(f"report: {', '.join(os.path.relpath(p, out_dir) for p in written[:4])}, ... in "
        f"{out_dir}; {results['wall_s']:g} s in all")
    bad = [c for c in results["cells"] if c["status"] != "valid"]
    for c in bad:
        log(f"not valid: {cell_name(c['family'], c['target'], c['fault'])}: {summary_line(c)}")
    failures = check_expectations(args, results)
    return 1 if bad or failures else 0
