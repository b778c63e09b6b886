"""The lock lab's report (docs/lock-lab.md "Files of a run"), from a results dir alone:
table.md, heatmap.png, timelines/<cell>.png and index.html.

    /usr/bin/python3 jepsen/locklab/report.py RESULTS_DIR

It reads only results.json and each cell's cell.json, nemesis.jsonl and sections.tsv, so a report
can be regenerated (or restyled) without running the lab again. Charts are drawn by gnuplot, as
jepsen/charts.py does; without gnuplot the tables and index.html are still written.
"""

import html
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from locklab.families import FAMILIES  # noqa: E402  (the orders of docs/lock-lab.md)
from locklab.nemesis import FAULTS  # noqa: E402
from locklab.targets import TARGETS  # noqa: E402

# Severity of a cell, shared by the heat map and the HTML tables so they read the same.
COLOURS = {"safe": "#8fd18f", "overlap": "#ffe066", "corrupt": "#e06060", "broken": "#c8c8c8"}
SEVERITY_TEXT = {"safe": "no overlap, no corruption", "overlap": "overlaps, no corruption",
                 "corrupt": "corruptions", "broken": "invalid or error"}
TIMELINE_COLOURS = {"section": "#2e7d32", "overlapped": "#d32f2f", "refused": "#4a148c",
                    "fault": "#ffe0b2"}
LANE_HALF = 0.32  # half the height of a worker's lane that its bars fill


# ---------------------------------------------------------------------------------------------
# Loading


def load_results(results_dir):
    with open(os.path.join(results_dir, "results.json")) as f:
        return json.load(f)


def load_json(path):
    """A cell's cell.json, or {} when the cell died before writing it."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def read_sections(path):
    """(worker, start_s, end_s, overlapped, refused) of every section in sections.tsv."""
    sections = []
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        for line in f:
            v = line.rstrip("\n").split("\t")
            if len(v) < len(header):
                continue  # a cut-off last line of a cell that died: skip, never fail the report
            sections.append((int(v[col["worker"]]), float(v[col["start_s"]]),
                             float(v[col["end_s"]]), v[col["overlapped"]] == "1",
                             int(v[col["refused"]]) > 0))
    return sections


def fault_windows(directory, cell_json, end_s):
    """(start s, stop s) of every fault: cell.json's windows, else nemesis.jsonl's start/stop
    pairs (a cell that failed may lack cell.json); a window never stopped ends at end_s."""
    if cell_json.get("faults") is not None:
        return [(w["start_ns"] / 1e9, (w.get("stop_ns") or end_s * 1e9) / 1e9)
                for w in cell_json["faults"]]
    windows, start = [], None
    try:
        with open(os.path.join(directory, "nemesis.jsonl")) as f:
            for line in f:
                e = json.loads(line)
                if e.get("phase") == "start":
                    start = e["time_ns"] / 1e9
                elif e.get("phase") in ("stop", "heal") and start is not None:
                    windows.append((start, e["time_ns"] / 1e9))
                    start = None
    except (OSError, ValueError):
        return windows
    if start is not None:
        windows.append((start, max(start, end_s)))
    return windows


# ---------------------------------------------------------------------------------------------
# The grid: rows family · target, columns faults


def ordered(present, order):
    """The values of `present` in `order`, then the unknown ones as they first appeared."""
    known = [v for v in order if v in present]
    return known + [v for v in dict.fromkeys(present) if v not in order]


def grid_of(cells):
    """(rows [(family, target)], faults, {(family, target, fault): cell})."""
    by_key = {(c["family"], c["target"], c["fault"]): c for c in cells}
    families = ordered([c["family"] for c in cells], FAMILIES)
    targets = ordered([c["target"] for c in cells], TARGETS)
    pairs = {(c["family"], c["target"]) for c in cells}
    rows = [(f, t) for f in families for t in targets if (f, t) in pairs]
    faults = ordered([c["fault"] for c in cells], FAULTS)
    return rows, faults, by_key


def row_label(family, target):
    return f"{family} · {target}"


def cell_label(cell):
    return f"{cell['family']} · {cell['target']} · {cell['fault']}"


def cell_name(cell):
    """The cell's directory name, which names its timeline too."""
    return os.path.basename(os.path.normpath(
        cell.get("dir") or f"{cell['family']}--{cell['target']}--{cell['fault']}"))


def cell_dir(results_dir, cell):
    return os.path.join(results_dir, cell.get("dir") or os.path.join("cells", cell_name(cell)))


def broken(cell):
    """An invalid or failed cell tested nothing trustworthy: its numbers are not shown as
    results."""
    return cell.get("status") != "valid" or not cell.get("metrics")


def severity(cell):
    if broken(cell):
        return "broken"
    m = cell["metrics"]
    if (m.get("corruptions") or 0) > 0:
        return "corrupt"
    return "overlap" if (m.get("overlaps") or 0) > 0 else "safe"


def is_fenced(cell, cell_json):
    family = FAMILIES.get(cell["family"])
    return bool(cell_json.get("fenced", family is not None and family.fenced))


def notes_of(rows, faults, by_key):
    """{(family, target, fault): (number, text)} of every invalid or failed cell, numbered in
    table order so the footnotes read top to bottom."""
    notes = {}
    for family, target in rows:
        for fault in faults:
            cell = by_key.get((family, target, fault))
            if cell is not None and broken(cell):
                notes[(family, target, fault)] = (len(notes) + 1, why_broken(cell))
    return notes


def why_broken(cell):
    if cell.get("status") == "error" or cell.get("error"):
        lines = [ln.strip() for ln in (cell.get("error") or "").splitlines() if ln.strip()]
        # The last line of a traceback is the exception; the first says who failed.
        if not lines:
            return "error: no detail"
        text = lines[0] if len(lines) == 1 else f"{lines[0]} … {lines[-1]}"
        return "error: " + text[:300]
    reasons = cell.get("invalid") or ["no metrics"]
    return "invalid: " + "; ".join(" ".join(str(r).split()) for r in reasons)


# ---------------------------------------------------------------------------------------------
# Cell texts, shared by table.md and index.html


def num(x, digits=0):
    if x is None:
        return "?"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def ms(x):
    """A duration in ms, in the unit a reader takes in at once; none (no acquisition): '–'."""
    if x is None:
        return "–"
    if x >= 1000:
        return f"{x / 1000:.1f} s"
    return f"{x:.1f} ms" if x < 10 else f"{x:.0f} ms"


def availability(cell, time_s):
    m = cell["metrics"]
    rate = m.get("acquisitions_per_s")
    if rate is None and m.get("acquisitions") is not None and time_s:
        rate = m["acquisitions"] / time_s
    return "?" if rate is None else f"{rate:.1f}/s"


def summary_text(cell, fenced, time_s):
    m = cell["metrics"]
    corruptions = num(m.get("corruptions"))
    if fenced:
        corruptions += f" ({num(m.get('refused'))} refused)"
    return f"{num(m.get('overlaps'))} / {corruptions} / {availability(cell, time_s)}"


def latency_text(cell):
    m = cell["metrics"]
    return (f"{ms(m.get('acquire_ms_p50'))} / {ms(m.get('acquire_ms_p99'))} · "
            f"{ms(m.get('unavailable_ms_max'))}")


def told_text(cell):
    m = cell["metrics"]
    return f"{num(m.get('told_in_time'))}/{num(m.get('losses'))}"


class Tables:
    """The report's three tables as (title, legend, rows of cells); a cell is None (not run)
    or (text, cell, note number or None)."""

    def __init__(self, results, results_dir):
        self.rows, self.faults, self.by_key = grid_of(results["cells"])
        self.notes = notes_of(self.rows, self.faults, self.by_key)
        self.time_s = (results.get("params") or {}).get("time_s")
        self.fenced = {}
        for cell in results["cells"]:
            cj = load_json(os.path.join(cell_dir(results_dir, cell), "cell.json"))
            self.fenced[(cell["family"], cell["target"])] = is_fenced(cell, cj)

    def grid(self, text_of):
        out = []
        for family, target in self.rows:
            line = []
            for fault in self.faults:
                cell = self.by_key.get((family, target, fault))
                if cell is None:
                    line.append(None)
                elif broken(cell):
                    number = self.notes[(family, target, fault)][0]
                    word = "error" if cell.get("status") == "error" else "invalid"
                    line.append((word, cell, number))
                else:
                    line.append((text_of(cell, family, target), cell, None))
            out.append((row_label(family, target), line))
        return out

    def all(self):
        fenced = self.fenced
        return [
            ("Overlaps / corruptions / availability",
             "overlaps: pairs of critical sections of different workers that overlapped in "
             "real time · corruptions: increments lost (fenced families: and, in parentheses, "
             "accesses the resource refused) · availability: acquisitions per second",
             self.grid(lambda c, f, t: summary_text(c, fenced[(f, t)], self.time_s))),
            ("Acquire latency and unavailability",
             "acquire latency p50 / p99 · the longest window in which nobody held the lock",
             self.grid(lambda c, f, t: latency_text(c))),
            ("Told in time",
             "told / losses: of the grants overtaken by another worker's grant while their "
             "holder still believed it held the lock, how many holders had been told they lost "
             "it before the other's grant",
             self.grid(lambda c, f, t: told_text(c))),
        ]


# ---------------------------------------------------------------------------------------------
# table.md


def md_escape(text):
    """Pipes would split a table cell; a '<' would start an HTML tag and hide the text."""
    return str(text).replace("|", "\\|").replace("<", "\\<")


def md_table(faults, grid):
    lines = ["| family · target | " + " | ".join(faults) + " |",
             "|---|" + "---|" * len(faults)]
    for label, line in grid:
        texts = []
        for entry in line:
            if entry is None:
                texts.append("–")
            else:
                text, _, number = entry
                texts.append(md_escape(text) + (f" [{number}]" if number else ""))
        lines.append(f"| {md_escape(label)} | " + " | ".join(texts) + " |")
    return lines


def write_table_md(path, tables):
    out = ["# Lock lab results", "",
           "Rows: lock family · target server; columns: the fault injected. A cell marked "
           "`invalid` or `error` tested nothing trustworthy; the notes below the first table say "
           "why. `–`: not run.", ""]
    for i, (title, legend, grid) in enumerate(tables.all()):
        out += [f"## {title}", "", legend + ".", ""]
        out += md_table(tables.faults, grid)
        out.append("")
        if i == 0 and tables.notes:
            out += ["Notes:", ""]
            for (family, target, fault), (number, text) in tables.notes.items():
                out.append(f"- [{number}] {family} · {target} · {fault}: {md_escape(text)}")
            out.append("")
    with open(path, "w") as f:
        f.write("\n".join(out))


# ---------------------------------------------------------------------------------------------
# gnuplot


def gp_str(text):
    """A gnuplot double-quoted string literal of any text (titles, labels, paths)."""
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return f'"{escaped}"'


def gnuplot_terminal(gnuplot):
    """pngcairo (antialiased, UTF-8 labels) when this gnuplot has it, else libgd's png."""
    done = subprocess.run([gnuplot, "-e", "set terminal"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if "pngcairo" in done.stdout:
        return 'pngcairo font "sans,9" noenhanced'
    return 'png font "sans,8" noenhanced'


def run_gnuplot(gnuplot, scripts, work_dir):
    """Runs the scripts, in as many gnuplot processes as there are CPUs: one process per chart
    would spend most of its time starting gnuplot. Prints whatever gnuplot says (warnings
    included, so that a chart that quietly lost data is noticed)."""
    n = max(1, min(len(scripts), os.cpu_count() or 1))
    procs = []
    for i in range(n):
        path = os.path.join(work_dir, f"chunk{i}.gp")
        with open(path, "w") as f:
            f.write("\n".join(scripts[i::n]))
        procs.append(subprocess.Popen([gnuplot, path], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    for proc in procs:
        out = proc.communicate()[0].strip()
        if out or proc.returncode != 0:
            print(f"report: gnuplot (status {proc.returncode}): {out[-2000:]}", file=sys.stderr,
                  flush=True)


def heatmap_script(tables, terminal, data_path, png_path):
    """Rows top to bottom as in table.md; one box per cell coloured by severity, labelled
    overlaps/corruptions (white text on red, black elsewhere)."""
    nrows, ncols = len(tables.rows), len(tables.faults)
    with open(data_path, "w") as f:
        for y, (family, target) in enumerate(tables.rows):
            for x, fault in enumerate(tables.faults):
                cell = tables.by_key.get((family, target, fault))
                if cell is not None:
                    f.write(heatmap_line(x, y, cell) + "\n")
    ytics = ", ".join(f"{gp_str(row_label(f, t))} {y}" for y, (f, t) in enumerate(tables.rows))
    xtics = ", ".join(f"{gp_str(fault)} {x}" for x, fault in enumerate(tables.faults))
    key = ", \\\n     ".join(
        f'NaN with boxes fs solid 1.0 fc rgb "{COLOURS[s]}" title {gp_str(SEVERITY_TEXT[s])}'
        for s in ("safe", "overlap", "corrupt", "broken"))
    width = 300 + 125 * ncols
    height = 150 + 28 * nrows
    return f"""reset
set terminal {terminal} size {width},{height}
set output {gp_str(png_path)}
set title "Lock lab: overlaps/corruptions per cell" font ",12"
set tmargin 5
set datafile separator "\\t"
set xrange [-0.5:{ncols - 0.5}]
set yrange [{nrows - 0.5}:-0.5]
unset xtics
set x2range [-0.5:{ncols - 0.5}]
set x2tics ({xtics}) scale 0
set ytics ({ytics}) scale 0 nomirror
set border 0
set key outside bottom center horizontal maxcols 4 reverse Left samplen 1.5 width -5
set style fill solid 1.0
plot {gp_str(data_path)} using 1:2:(0.48):(0.46):3 with boxxyerror fc rgb variable notitle, \\
     {gp_str(data_path)} using 1:2:4:5 with labels tc rgb variable font ",10" notitle, \\
     {key}
"""


def heatmap_line(x, y, cell):
    sev = severity(cell)
    if sev == "broken":
        label = "error" if cell.get("status") == "error" else "invalid"
    else:
        m = cell["metrics"]
        label = f"{num(m.get('overlaps'))}/{num(m.get('corruptions'))}"
    text = 0xFFFFFF if sev == "corrupt" else 0x000000
    return f"{x}\t{y}\t{int(COLOURS[sev][1:], 16)}\t{label}\t{text}"


def timeline_script(cell, directory, params, terminal, data_prefix, png_path):
    """One lane per worker, one bar per section, faults shaded behind; None when the cell left
    no sections.tsv (it failed before its workers ran). `params` (the run's) stand in for a
    cell.json the cell did not write."""
    path = os.path.join(directory, "sections.tsv")
    if not os.path.exists(path):
        return None
    sections = read_sections(path)
    cj = load_json(os.path.join(directory, "cell.json"))
    time_s = float(cj.get("time_s") or params.get("time_s") or 0)
    end_s = max([time_s] + [s[2] for s in sections])
    faults = fault_windows(directory, cj, end_s)
    end_s = max([end_s] + [e for _, e in faults]) or 1.0
    workers = int(cj.get("workers") or params.get("workers") or 0)
    workers = max([workers] + [s[0] for s in sections]) or 1
    # Data files, not one gnuplot object per section: a long cell has many thousands.
    layers = timeline_layers(sections, faults, workers, data_prefix)
    plots = [f"{gp_str(p)} {spec}" for p, spec in layers]
    if not plots:
        plots = ["NaN notitle"]  # an empty cell still gets its (empty) lanes and title
    ytics = ", ".join(f'"worker {w}" {w}' for w in range(1, workers + 1))
    empty = "" if sections else (
        'set label "no critical sections" at graph 0.5, graph 0.5 center front')
    return f"""reset
set terminal {terminal} size 1400,{190 + 34 * workers}
set output {gp_str(png_path)}
set title {gp_str(timeline_title(cell))}
set xlabel "seconds since the cell's start (shaded: fault windows)"
set xrange [0:{end_s:.3f}]
set yrange [{workers + 0.6}:0.4]
set ytics ({ytics}) scale 0
set grid x
set key outside bottom center horizontal maxcols 4 reverse Left samplen 1.5
set bmargin 5
{empty}
plot {", ".join(plots)}
"""


def timeline_layers(sections, faults, workers, prefix):
    """Writes the data files of a timeline and returns (path, plot spec) of the non-empty ones,
    back to front (gnuplot warns about an empty data file)."""
    c = TIMELINE_COLOURS
    bar = f"using (($1+$2)/2):3:1:2:($3-{LANE_HALF}):($3+{LANE_HALF}) with boxxyerror"
    layers = [
        ("faults", [(s, e, (workers + 1) / 2) for s, e in faults],
         f"using (($1+$2)/2):3:1:2:(0.4):({workers + 0.6}) with boxxyerror "
         f'fs solid 1.0 noborder fc rgb "{c["fault"]}" title "fault"'),
        # A bar's border keeps a 50 ms section visible on a ten-minute axis.
        ("sections", [(s, e, w) for w, s, e, o, _ in sections if not o],
         f'{bar} fs solid 1.0 border lc rgb "{c["section"]}" fc rgb "{c["section"]}" '
         'title "section"'),
        ("overlapped", [(s, e, w) for w, s, e, o, _ in sections if o],
         f'{bar} fs solid 1.0 border lc rgb "{c["overlapped"]}" fc rgb "{c["overlapped"]}" '
         'title "overlapped section"'),
        ("refused", [(s, e, w) for w, s, e, _, r in sections if r],
         f"using (($1+$2)/2):($3-{LANE_HALF + 0.1}) with points pt 11 ps 0.9 "
         f'lc rgb "{c["refused"]}" title "section with a refused access"'),
    ]
    out = []
    for name, rows, spec in layers:
        if not rows:
            continue
        path = f"{prefix}-{name}.dat"
        with open(path, "w") as f:
            f.writelines(f"{s:.6f} {e:.6f} {y}\n" for s, e, y in rows)
        out.append((path, spec))
    return out


def timeline_title(cell):
    m = cell.get("metrics")
    if not m:
        return f"{cell_label(cell)}: {cell.get('status')}, no metrics"
    title = (f"{cell_label(cell)}: {num(m.get('overlaps'))} overlaps, "
             f"{num(m.get('corruptions'))} corruptions")
    return title if cell.get("status") == "valid" else f"{title} ({cell.get('status')})"


def write_charts(results_dir, results, tables):
    """heatmap.png and timelines/*.png; returns {cell name: png path} of the timelines written
    and whether the heat map was."""
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        print("report: no gnuplot; no charts", file=sys.stderr, flush=True)
        return {}, False
    terminal = gnuplot_terminal(gnuplot)
    timelines_dir = os.path.join(results_dir, "timelines")
    os.makedirs(timelines_dir, exist_ok=True)
    heatmap = os.path.join(results_dir, "heatmap.png")
    with tempfile.TemporaryDirectory(prefix="locklab-report-") as work:
        scripts = [heatmap_script(tables, terminal, os.path.join(work, "heatmap.dat"), heatmap)]
        wanted = {}
        for cell in results["cells"]:
            name = cell_name(cell)
            png = os.path.join(timelines_dir, name + ".png")
            script = timeline_script(cell, cell_dir(results_dir, cell),
                                     results.get("params") or {}, terminal,
                                     os.path.join(work, name), png)
            if script is not None:
                scripts.append(script)
                wanted[name] = png
        for png in [heatmap, *wanted.values()]:
            if os.path.exists(png):
                os.remove(png)  # so that a chart gnuplot failed to draw is not an old one
        run_gnuplot(gnuplot, scripts, work)
    drawn = {name: png for name, png in wanted.items() if os.path.exists(png)}
    return drawn, os.path.exists(heatmap)


# ---------------------------------------------------------------------------------------------
# index.html

CSS = """
body { font: 14px/1.4 sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #bbb; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eee; }
td.c { text-align: center; white-space: nowrap; }
td.c a { color: inherit; text-decoration: none; }
td.c a:hover { text-decoration: underline; }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 6px; }
pre { background: #f6f6f6; padding: 6px; white-space: pre-wrap; }
section.cell { border-top: 1px solid #ccc; margin-top: 1.5em; }
img { max-width: 100%; }
code { background: #f2f2f2; padding: 1px 3px; }
"""


def e(text):
    return html.escape(str(text), quote=True)


def html_grid(faults, grid, timelines):
    out = ["<table>", "<tr><th>family · target</th>"
           + "".join(f"<th>{e(f)}</th>" for f in faults) + "</tr>"]
    for label, line in grid:
        tds = [f"<th>{e(label)}</th>"]
        for entry in line:
            tds.append('<td class="c">–</td>' if entry is None else html_cell(entry, timelines))
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def html_cell(entry, timelines):
    """Coloured like the heat map; links to the cell's timeline (or, lacking one, to its
    section of the page)."""
    text, cell, number = entry
    name = cell_name(cell)
    href = f"timelines/{name}.png" if name in timelines else f"#{name}"
    note = f" [{number}]" if number else ""
    return (f'<td class="c" style="background:{COLOURS[severity(cell)]}" '
            f'title="{e(cell_label(cell))}"><a href="{e(href)}">{e(text)}{note}</a></td>')


def html_header(results):
    params = results.get("params") or {}
    wall = results.get("wall_s")
    rows = [("started", results.get("started")),
            ("wall time", "?" if wall is None else f"{wall} s"),
            ("command", results.get("command")),
            *((k, v) for k, v in params.items())]
    body = "".join(f"<tr><th>{e(k)}</th><td><code>{e(v)}</code></td></tr>" for k, v in rows)
    legend = "".join(f'<span style="background:{COLOURS[s]}">{e(SEVERITY_TEXT[s])}</span>'
                     for s in COLOURS)
    return (f"<h1>Lock lab</h1>\n<table>{body}</table>\n"
            f'<p class="legend">{legend}</p>')


def html_notes(tables):
    if not tables.notes:
        return ""
    items = "".join(
        f'<li><a href="#{e(cell_name(tables.by_key[k]))}">[{n}] {e(" · ".join(k))}</a>: '
        f"{e(text)}</li>" for k, (n, text) in tables.notes.items())
    return f"<p>Notes:</p><ul>{items}</ul>"


def html_cell_section(cell, timelines):
    name = cell_name(cell)
    parts = [f'<section class="cell" id="{e(name)}"><h3>{e(cell_label(cell))}</h3>',
             f"<p>status: <b>{e(cell.get('status'))}</b> · faults injected: "
             f"{e(cell.get('faults_injected'))} · mutex model: {e(cell.get('mutex_verdict'))}"
             f" · <a href=\"{e(cell.get('dir') or os.path.join('cells', name))}/\">files</a>"
             "</p>"]
    if cell.get("invalid"):
        parts.append("<ul>" + "".join(f"<li>{e(r)}</li>" for r in cell["invalid"]) + "</ul>")
    if cell.get("error"):
        parts.append(f"<pre>{e(cell['error'])}</pre>")
    if name in timelines:
        parts.append(f'<img loading="lazy" src="timelines/{e(name)}.png" '
                     f'alt="timeline of {e(cell_label(cell))}">')
    if cell.get("metrics"):
        parts.append(metrics_table(cell["metrics"]))
    parts.append("</section>")
    return "\n".join(parts)


def metrics_table(metrics):
    cells = []
    for k, v in metrics.items():
        text = json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v
        cells.append(f"<tr><th>{e(k)}</th><td><code>{e(text)}</code></td></tr>")
    return f"<table>{''.join(cells)}</table>"


def write_index_html(path, results, tables, timelines, heatmap):
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           "<title>Lock lab</title>", f"<style>{CSS}</style></head><body>",
           html_header(results)]
    if heatmap:
        out.append('<h2>Heat map</h2><img src="heatmap.png" alt="heat map of the cells">')
    for i, (title, legend, grid) in enumerate(tables.all()):
        out += [f"<h2>{e(title)}</h2>", f"<p>{e(legend)}.</p>",
                html_grid(tables.faults, grid, timelines)]
        if i == 0:
            out.append(html_notes(tables))
    out.append("<h2>Cells</h2>")
    for family, target in tables.rows:
        for fault in tables.faults:
            cell = tables.by_key.get((family, target, fault))
            if cell is not None:
                out.append(html_cell_section(cell, timelines))
    out.append("</body></html>\n")
    with open(path, "w") as f:
        f.write("\n".join(out))


# ---------------------------------------------------------------------------------------------


def write_report(results_dir):
    """Writes table.md, heatmap.png, timelines/<cell>.png and index.html into results_dir from
    what a run left there; returns the paths written (joined to results_dir), the summaries
    first. No results.json (a run that ended before its first cell): nothing to report, []."""
    if not os.path.exists(os.path.join(results_dir, "results.json")):
        return []
    results = load_results(results_dir)
    tables = Tables(results, results_dir)
    table_md = os.path.join(results_dir, "table.md")
    write_table_md(table_md, tables)
    timelines, heatmap = write_charts(results_dir, results, tables)
    index = os.path.join(results_dir, "index.html")
    write_index_html(index, results, tables, timelines, heatmap)
    written = [table_md] + ([os.path.join(results_dir, "heatmap.png")] if heatmap else [])
    return written + [index] + list(timelines.values())


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} RESULTS_DIR", file=sys.stderr)
        return 2
    if not os.path.exists(os.path.join(argv[1], "results.json")):
        print(f"report: no results.json in {argv[1]}", file=sys.stderr)
        return 2
    written = write_report(argv[1])
    print(f"report: {len(written)} files in {argv[1]}: {os.path.join(argv[1], 'index.html')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
