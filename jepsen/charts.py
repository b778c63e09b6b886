"""Charts of one harness run: latency over time and throughput, nemesis periods shaded (gnuplot)."""

import json
import os
import shutil
import subprocess


def load_operations(history_path):
    """(completion time s, latency ms, outcome) of every completed operation."""
    pending = {}
    ops = []
    with open(history_path) as f:
        for line in f:
            e = json.loads(line)
            if e["type"] == "invoke":
                pending[e["process"]] = e["time_ns"]
            elif e["type"] in ("ok", "fail", "info") and e["process"] in pending:
                start = pending.pop(e["process"])
                ops.append((e["time_ns"] / 1e9, (e["time_ns"] - start) / 1e6, e["type"]))
    return ops


def load_faults(nemesis_path):
    """(start s, stop s, fault) of every fault; one still open at the end stops at the heal."""
    faults, open_faults = [], {}
    with open(nemesis_path) as f:
        for line in f:
            e = json.loads(line)
            t = e["time_ns"] / 1e9
            if e["phase"] == "start":
                open_faults[e["fault"]] = t
            elif e["phase"] == "stop" and e["fault"] in open_faults:
                faults.append((open_faults.pop(e["fault"]), t, e["fault"]))
            elif e["phase"] == "heal":
                faults += [(s, t, name) for name, s in open_faults.items()]
                open_faults = {}
    return faults


def write_charts(out_dir, title):
    """Writes latency.png and throughput.png; returns their names, or [] without gnuplot."""
    gnuplot = shutil.which("gnuplot")
    history = os.path.join(out_dir, "history.jsonl")
    if gnuplot is None or not os.path.exists(history):
        return []
    ops = load_operations(history)
    nemesis = os.path.join(out_dir, "nemesis.jsonl")
    faults = load_faults(nemesis) if os.path.exists(nemesis) else []
    data = os.path.join(out_dir, "charts")
    os.makedirs(data, exist_ok=True)
    for outcome in ("ok", "fail", "info"):
        with open(os.path.join(data, f"latency-{outcome}.dat"), "w") as f:
            for t, latency, kind in ops:
                if kind == outcome:
                    f.write(f"{t:.6f} {max(latency, 0.001):.3f}\n")
    buckets = {}
    for t, _, kind in ops:
        counts = buckets.setdefault(int(t), {"ok": 0, "fail": 0, "info": 0})
        counts[kind] += 1
    with open(os.path.join(data, "throughput.dat"), "w") as f:
        # Every second up to the last, so a second without completions shows as zero.
        for second in range(0, max(buckets, default=-1) + 1):
            c = buckets.get(second, {"ok": 0, "fail": 0, "info": 0})
            f.write(f"{second + 0.5} {c['ok']} {c['fail']} {c['info']}\n")
    shading = "".join(
        f'set object {i + 1} rect from {s:.3f}, graph 0 to {e:.3f}, graph 1 '
        f'fc rgb "#f4c7c3" fs solid 0.5 noborder behind\n'
        f'set label {i + 1} "{name}" at {s:.3f}, graph 0.97 font ",8"\n'
        for i, (s, e, name) in enumerate(faults))
    script = f"""set terminal pngcairo size 1200,500 noenhanced
set xlabel "seconds"
set key outside right
{shading}
set output "{out_dir}/latency.png"
set title "{title}: latency per operation (shaded: faults)"
set ylabel "latency ms"
set logscale y
plot "{data}/latency-ok.dat" using 1:2 with points pt 7 ps 0.3 lc rgb "#2e7d32" title "ok", \\
     "{data}/latency-fail.dat" using 1:2 with points pt 7 ps 0.5 lc rgb "#1565c0" title "fail", \\
     "{data}/latency-info.dat" using 1:2 with points pt 7 ps 0.7 lc rgb "#c62828" title "info"
unset logscale y
set output "{out_dir}/throughput.png"
set title "{title}: completed operations per second (shaded: faults)"
set ylabel "operations/s"
plot "{data}/throughput.dat" using 1:2 with histeps lc rgb "#2e7d32" title "ok", \\
     "{data}/throughput.dat" using 1:3 with histeps lc rgb "#1565c0" title "fail", \\
     "{data}/throughput.dat" using 1:4 with histeps lc rgb "#c62828" title "info"
"""
    script_path = os.path.join(data, "charts.gp")
    with open(script_path, "w") as f:
        f.write(script)
    done = subprocess.run([gnuplot, script_path], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(f"jepsen: gnuplot failed: {done.stdout.strip()}", flush=True)
        return []
    return ["latency.png", "throughput.png"]
