#!/usr/bin/env python3
"""The report of bench/compare.sh: reads OUT/results.jsonl (raftlock-bench --json output) and
writes OUT/results.json (one array), OUT/table.md (printed too) and OUT/chart.png (gnuplot:
ops/s and p50 per scenario and system, log scales).

    bench/compare_report.py OUT

Ratios are raftlock's figure divided by the peer's: ops/s > 1 and p50 < 1 favour raftlock.
Runs with errors are marked; a missing system simply has no row.
"""
import json
import os
import subprocess
import sys


def load(path):
    runs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                runs.append(json.loads(line))
    return runs


def ms(us):
    return us / 1000.0


def fmt_ms(us):
    v = ms(us)
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


# Scenarios with tables of their own (their figures are not ops/s and latency of one operation).
FAILOVER = ("lock.failover.holder", "lock.failover.leader")
KEEPALIVE = "session.keepalive"


def special(run):
    return run["scenario"] in FAILOVER or run["scenario"] == KEEPALIVE


def cell(figures, name, digits=0):
    v = figures.get(name)
    return "" if v is None else f"{v:.{digits}f}"


def election(figures):
    """When a poll of peers.sh first named a new leader, and how long since the poll before."""
    seen = figures.get("new_leader_seen_after_kill_ms")
    if seen is None:
        return ""
    return f"{seen:.0f} ({figures.get('new_leader_seen_within_ms', 0):.0f})"


def failover_table(runs):
    holder = {r["system"]: r for r in runs if r["scenario"] == "lock.failover.holder"}
    leader = {r["system"]: r for r in runs if r["scenario"] == "lock.failover.leader"}
    if not holder and not leader:
        return []
    lines = ["| system | session timeout ms | holder killed → next grant, ms (each) | median ms | "
             "leader killed: unavailable ms | new leader seen after kill ms (poll interval) | "
             "clients back after kill ms | longest gap before the kill ms | failed calls | "
             "notes |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for system in list(dict.fromkeys(list(holder) + list(leader))):
        h = holder.get(system, {"figures": {}, "errors": 0, "first_error": "", "note": ""})
        lf = leader.get(system, {"figures": {}, "errors": 0, "first_error": "", "note": ""})
        hf, lff = h["figures"], lf["figures"]
        takes = ", ".join(f"{v:.0f}" for k, v in sorted(hf.items()) if k.startswith("take_"))
        notes = []
        if h["errors"]:
            notes.append("holder: " + h["first_error"][:60].replace("|", "/"))
        if lf.get("note") and "unavailable_ms" not in lff:
            notes.append("leader: " + lf["note"][:60].replace("|", "/"))
        if lf["errors"]:
            notes.append("first failure: " + lf["first_error"][:50].replace("|", "/"))
        lines.append(f"| {system} | {cell(hf, 'session_timeout_ms')} | {takes} | "
                     f"{cell(hf, 'median_ms')} | {cell(lff, 'unavailable_ms')} | "
                     f"{election(lff)} | {cell(lff, 'clients_back_after_kill_ms')} | "
                     f"{cell(lff, 'longest_gap_before_kill_ms')} | "
                     f"{lf['errors'] if 'unavailable_ms' in lff else ''} | {'; '.join(notes)} |")
    return lines + [""]


def keepalive_table(runs):
    rs = [r for r in runs if r["scenario"] == KEEPALIVE]
    if not rs:
        return []
    lines = ["| system | idle sessions | open s | kv.write ops/s | p50 ms | p99 ms | "
             "server CPU % | server RSS MiB | load generator CPU % | keepalive errors | notes |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rs:
        f = r["figures"]
        lat = r["latency_us"]
        measured = r["ops"] > 0
        notes = (r.get("note") or r["first_error"])[:70].replace("|", "/")
        lines.append(f"| {r['system']} | {cell(f, 'idle_sessions')} | {cell(f, 'open_s', 3)} | "
                     f"{r['ops_per_s']:.0f} | {fmt_ms(lat['p50']) if measured else ''} | "
                     f"{fmt_ms(lat['p99']) if measured else ''} | {cell(f, 'server_cpu_pct')} | "
                     f"{cell(f, 'server_rss_mib')} | {cell(f, 'client_cpu_pct')} | "
                     f"{cell(f, 'keepalive_errors')} | {notes} |")
    return lines + [""]


def load_pct(run, runs):
    """An open-loop run's rate as a percentage of the same system's closed-loop ops/s with the
    same scenario and clients (bench/compare.sh sets the rate that way); None when closed."""
    if not run.get("rate_per_s"):
        return None
    closed = [r for r in runs if r["system"] == run["system"] and r["scenario"] == run["scenario"]
              and r["clients"] == run["clients"] and not r.get("rate_per_s") and r["ops_per_s"]]
    if not closed:
        return 0
    return round(100 * run["rate_per_s"] / closed[-1]["ops_per_s"])


def group_key(run, runs):
    pct = load_pct(run, runs)
    scenario = run["scenario"] if pct is None else f"{run['scenario']} open {pct} %"
    return (scenario, run["clients"])


def table(runs):
    lines = []
    floor = [r for r in runs if r["system"] == "floor"]
    if floor:
        lines.append("| floor | ops/s | p50 ms | p99 ms | p99.9 ms |")
        lines.append("|---|---:|---:|---:|---:|")
        for r in floor:
            lat = r["latency_us"]
            lines.append(f"| {r['scenario']} | {r['ops_per_s']:.0f} | {fmt_ms(lat['p50'])} | "
                         f"{fmt_ms(lat['p99'])} | {fmt_ms(lat['p999'])} |")
        lines.append("")
    lines += failover_table(runs)
    lines += keepalive_table(runs)
    groups = {}
    for r in runs:
        if r["system"] != "floor" and not special(r):
            groups.setdefault(group_key(r, runs), []).append(r)
    if not groups:
        return "\n".join(lines) + "\n"
    lines.append("| scenario | clients | system | ops/s | p50 ms | p99 ms | p99.9 ms | errors | "
                 "raftlock ÷ peer ops/s | raftlock ÷ peer p50 | notes |")
    lines.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for (scenario, clients), rs in groups.items():
        base = next((r for r in rs if r["system"] == "raftlock"), None)
        # raftlock's ZooKeeper port and ZooKeeper, measured by the same driver: the servers alone.
        zookeeper = next((r for r in rs if r["system"] == "zookeeper"), None)
        # raftlock's Redis port and a durable Redis, measured by the same driver.
        redis = next((r for r in rs if r["system"] == "redis"), None)
        for r in rs:
            lat = r["latency_us"]
            ratio_ops = ratio_p50 = ""
            if base is not None and r["system"] != "raftlock":
                if r["ops_per_s"] > 0:
                    ratio_ops = f"{base['ops_per_s'] / r['ops_per_s']:.2f}"
                if lat["p50"] > 0:
                    ratio_p50 = f"{base['latency_us']['p50'] / lat['p50']:.2f}"
            notes = []
            figures = r.get("figures", {})
            if "fifo_violations" in figures:
                notes.append(f"FIFO violations {figures['fifo_violations']:.0f}")
            if figures.get("missed"):
                notes.append(f"missed {figures['missed']:.0f}")
            acquire = r.get("more_latency_us", {}).get("acquire")
            if acquire:
                notes.append(f"acquire p50 {fmt_ms(acquire['p50'])} ms")
            if r.get("rate_per_s"):
                notes.append(f"rate {r['rate_per_s']:.0f}/s, latency from intended start")
            if r["system"] == "raftlock-zk" and zookeeper is not None and zookeeper["ops_per_s"] > 0:
                notes.append(f"{r['ops_per_s'] / zookeeper['ops_per_s']:.2f}x ZooKeeper's ops/s "
                             "(same driver)")
            if r["system"] == "raftlock-redis" and redis is not None and redis["ops_per_s"] > 0:
                notes.append(f"{r['ops_per_s'] / redis['ops_per_s']:.2f}x durable Redis's ops/s "
                             "(same driver)")
            if r.get("note"):
                notes.append(r["note"][:60].replace("|", "/"))
            if r["errors"]:
                notes.append("first error: " + r["first_error"][:60].replace("|", "/"))
            lines.append(f"| {scenario} | {clients} | {r['system']} | {r['ops_per_s']:.0f} | "
                         f"{fmt_ms(lat['p50'])} | {fmt_ms(lat['p99'])} | {fmt_ms(lat['p999'])} | "
                         f"{r['errors']} | {ratio_ops} | {ratio_p50} | {'; '.join(notes)} |")
    return "\n".join(lines) + "\n"


def chart(runs, out_dir):
    systems = []
    groups = []
    values = {}
    for r in runs:
        if r["system"] == "floor" or special(r):
            continue
        if r["system"] not in systems:
            systems.append(r["system"])
        scenario, clients = group_key(r, runs)
        g = f"{scenario} x{clients}"
        if g not in groups:
            groups.append(g)
        values[(g, r["system"])] = (r["ops_per_s"], ms(r["latency_us"]["p50"]))
    if not groups:
        return None
    data = os.path.join(out_dir, "chart.dat")
    with open(data, "w") as f:
        f.write("# group " + " ".join(f"{s}_ops {s}_p50" for s in systems) + "\n")
        for g in groups:
            cells = []
            for s in systems:
                ops, p50 = values.get((g, s), (None, None))
                cells.append("NaN" if not ops else f"{ops:.1f}")
                cells.append("NaN" if not p50 else f"{p50:.4f}")
            f.write('"' + g + '" ' + " ".join(cells) + "\n")
    png = os.path.join(out_dir, "chart.png")
    ops_plot = ", ".join(f"'{data}' using {2 + 2 * i}:xtic(1) title '{s}'"
                         for i, s in enumerate(systems))
    p50_plot = ", ".join(f"'{data}' using {3 + 2 * i}:xtic(1) title '{s}'"
                         for i, s in enumerate(systems))
    script = f"""
set terminal pngcairo size 1400,900 font ',10'
set output '{png}'
set multiplot layout 2,1 title 'raftlock vs etcd, ZooKeeper, Redis (same machine, one run)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right top
set logscale y
set grid ytics
set xtics rotate by -30 font ',8'
set ylabel 'ops/s (log)'
plot {ops_plot}
set ylabel 'p50 latency, ms (log)'
plot {p50_plot}
unset multiplot
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"compare_report: no chart ({e})", file=sys.stderr)
        return None
    return png


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    runs = load(os.path.join(out_dir, "results.jsonl"))
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(runs, f, indent=1)
    text = table(runs)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text)
    print(text)
    png = chart(runs, out_dir)
    print(f"results: {out_dir}/results.json, table: {out_dir}/table.md"
          + (f", chart: {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
