// raftlock's web console: polls this node's admin port (/api/*, documented in
// docs/operations.md) and draws what it answers. No framework and no build step: plain DOM and a
// <canvas>. Every value from the server is put in the page as text, never as HTML.
"use strict";

const POLL_MS = 1000;
const FEED_WAIT_MS = 20000;
const FEED_KEPT = 300; // lines of the live feed kept in the page

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function duration(ms) {
  if (ms === null || ms === undefined) return "";
  const neg = ms < 0;
  ms = Math.abs(ms);
  let text;
  if (ms < 1000) text = ms + " ms";
  else if (ms < 60000) text = (ms / 1000).toFixed(1) + " s";
  else if (ms < 3600000) text = Math.floor(ms / 60000) + " min " + Math.floor((ms % 60000) / 1000) + " s";
  else text = (ms / 3600000).toFixed(1) + " h";
  return neg ? "−" + text : text;
}

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok && response.status !== 404) {
    throw new Error(path + ": HTTP " + response.status + " " + (await response.text()));
  }
  return response.json();
}

// ---- actions (only when the node runs with --console-actions on) --------------------------------

let actions = { actions: false, login_needed: false };
let credentials = null; // "Basic ..." once a root user logged in (kept in this page only)

async function act(what, query, question) {
  if (!confirm(question)) return;
  for (let attempt = 0; attempt < 2; attempt++) {
    const headers = { "X-Raftlock-Console": "1" };
    if (credentials) headers["Authorization"] = credentials;
    const response = await fetch("/api/actions/" + what + "?" + new URLSearchParams(query),
                                 { method: "POST", headers });
    const text = await response.text();
    if (response.status === 401 && attempt === 0) {
      const user = prompt("A root user's name (authentication is enabled):", "root");
      if (user === null) return;
      const password = prompt("Password of " + user + ":");
      if (password === null) return;
      credentials = "Basic " + btoa(user + ":" + password);
      continue;
    }
    if (!response.ok) credentials = response.status === 401 ? null : credentials;
    alert((response.ok ? "" : "Refused (HTTP " + response.status + "): ") + text);
    poll();
    return;
  }
}

function actionButton(label, onclick) {
  return actions.actions ? el("button", { class: "action", onclick }, label) : null;
}

function fillBody(table, rows) {
  const body = table.querySelector("tbody");
  body.replaceChildren(...rows);
}

// ---- cluster -----------------------------------------------------------------------------------

function renderCluster(c) {
  const self = c.self;
  const healthClass = c.healthy ? "ok" : "bad";
  document.getElementById("node-summary").replaceChildren(
    "node " + self.id + " · ", el("span", { class: "role-" + self.role }, self.role),
    " · term " + self.term + " · leader " + (self.leader || "none") + " · ",
    el("span", { class: healthClass }, c.health));
  document.getElementById("cluster-view").textContent =
    c.view === "leader" ? "(the leader's view: lag = entries not yet acknowledged)"
                        : "(a follower's view: open the leader's console for every member's lag)";
  fillBody(document.getElementById("members"), c.members.map((m) => {
    const health = m.health || "";
    const cls = /ok|replicating/.test(health) ? "ok" : health ? "warn" : "";
    return el("tr", { "data-member": m.id },
      el("td", {}, m.id + (m.self ? " (this node)" : "")),
      el("td", {}, m.raft_address || ""),
      el("td", { class: "role-" + m.role }, m.role),
      el("td", { class: "num" }, m.term ?? ""),
      el("td", { class: "num" }, m.commit ?? ""),
      el("td", { class: "num" }, m.applied ?? ""),
      el("td", { class: "num" }, m.match ?? ""),
      el("td", { class: "num" }, m.lag ?? "?"),
      el("td", { class: cls }, health || "unknown here",
        m.role !== "leader" && !m.learner
          ? actionButton("make leader", () => act("transfer-leadership", { to: m.id },
                                                   "Hand leadership to node " + m.id + "?"))
          : null));
  }));
}

// ---- locks -------------------------------------------------------------------------------------

function renderLocks(data) {
  document.getElementById("locks-total").textContent = "(" + data.total + " in all)";
  fillBody(document.getElementById("locks"), data.locks.map((lock) => {
    const holders = lock.holders.map((h) =>
      el("span", { class: "holder", "data-session": h.session, "data-token": h.token },
        "s" + h.session + " · " + (h.owner || "—") + " · ",
        el("span", { class: "token" }, "token " + h.token),
        " · " + duration(h.held_for_ms) + (h.count > 1 ? " ×" + h.count : ""),
        actionButton("force release", () => act("force-release",
          { name: lock.name, session: h.session, token: h.token },
          "Take lock " + lock.name + " away from session " + h.session + " (token " + h.token +
          ")? Its holder is told; lock-delay applies."))));
    if (lock.holders_more) holders.push(el("span", { class: "muted" }, lock.holders_more + " more"));
    const waiters = lock.waiters.map((w) =>
      el("span", { class: "waiter", "data-session": w.session, "data-position": w.position },
        el("span", { class: "pos" }, w.position + ". "),
        "s" + w.session + " · " + (w.owner || "—") + " · " + w.mode + " · waited " +
          duration(w.waited_ms) +
          (w.together && w.together.length ? " · with " + w.together.join(", ") : "")));
    if (lock.waiters_more) waiters.push(el("span", { class: "muted" }, lock.waiters_more + " more"));
    let delay = lock.lock_delay_ms ? duration(lock.lock_delay_ms) : "—";
    if (lock.delay_left_ms > 0) delay += " (in force, " + duration(lock.delay_left_ms) + " left)";
    return el("tr", { "data-lock": lock.name },
      el("td", { class: "lock-name" }, lock.name),
      el("td", {}, lock.kind + (lock.kind === "semaphore" ? " of " + lock.permits : "")),
      el("td", { class: "holders" }, ...(holders.length ? holders : [el("span", { class: "muted" }, "free")])),
      el("td", { class: "waiters" }, ...(waiters.length ? waiters : [el("span", { class: "muted" }, "none")])),
      el("td", {}, delay));
  }));
  document.getElementById("locks-more").textContent =
    data.more ? "more locks match: narrow the prefix" : "";
}

// ---- sessions ----------------------------------------------------------------------------------

function renderSessions(data) {
  const known = data.sessions.length === 0 || data.sessions[0].time_left_ms !== null;
  document.getElementById("sessions-total").textContent = "(" + data.total +
    (known ? ", soonest to expire first)"
           : "; only the leader, node " + data.leader + ", knows their time left)");
  fillBody(document.getElementById("sessions"), data.sessions.map((s) => {
    const left = s.time_left_ms;
    const fraction = left === null ? 0 : Math.max(0, Math.min(1, left / s.timeout_ms));
    const cls = fraction < 0.25 ? "bad" : fraction < 0.5 ? "warn" : "";
    return el("tr", { "data-session": s.id },
      el("td", {}, "s" + s.id),
      el("td", {}, s.owner || "—"),
      el("td", { class: "num" }, duration(s.timeout_ms)),
      el("td", { title: "known from: " + s.time_left_from },
        ...(left === null ? [el("span", { class: "muted" }, "ask the leader")]
          : [el("span", { class: "bar " + cls, style: "width:" + Math.round(fraction * 5) + "em" }),
             duration(left)])),
      el("td", { class: "num" }, s.locks),
      el("td", { class: "num" }, s.ephemerals,
        actionButton("expire", () => act("expire-session", { session: s.id },
          "Expire session " + s.id + " now? Its locks are released (with lock-delay) and its " +
          "ephemeral nodes deleted."))));
  }));
  document.getElementById("sessions-more").textContent = data.more ? data.more + " more" : "";
}

// ---- live feed ---------------------------------------------------------------------------------

let feedAfter = 0;

function feedLine(e) {
  const parts = [];
  if (e.lock !== undefined) parts.push("lock " + e.lock);
  if (e.session !== undefined) parts.push("s" + e.session);
  if (e.owner !== undefined) parts.push("owner " + e.owner);
  if (e.token !== undefined) parts.push("token " + e.token);
  if (e.kind === "election") parts.push("node " + e.node + " campaigns in term " + e.term);
  if (e.kind === "leader-change") parts.push(e.node ? "leader is node " + e.node + " (term " + e.term + ")" : "no leader (term " + e.term + ")");
  if (e.index !== undefined) parts.push("@" + e.index);
  const time = new Date(e.wall_ms).toISOString().substring(11, 23);
  return el("li", { class: "fresh", "data-kind": e.kind, "data-seq": e.seq },
    time + " ", el("span", { class: "kind kind-" + e.kind }, e.kind), " " + parts.join(" · "));
}

async function followFeed() {
  const list = document.getElementById("feed");
  const state = document.getElementById("feed-state");
  for (;;) {
    try {
      const data = await getJson("/api/events?after=" + feedAfter + "&wait_ms=" + FEED_WAIT_MS);
      if (data.last_seq < feedAfter) {
        feedAfter = 0; // the node restarted: its numbers start again
        continue;
      }
      state.textContent = data.missed ? "(some events were dropped: the page fell behind)" : "(live)";
      for (const old of list.querySelectorAll("li.fresh")) old.classList.remove("fresh");
      for (const e of data.events) {
        list.prepend(feedLine(e));
        feedAfter = e.seq;
      }
      while (list.children.length > FEED_KEPT) list.lastElementChild.remove();
    } catch (err) {
      state.textContent = "(disconnected: " + err.message + "; retrying)";
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

// ---- charts ------------------------------------------------------------------------------------

function drawChart(canvas, samples, series) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 26;
  ctx.clearRect(0, 0, w, h);
  let max = 0;
  for (const s of series) for (const p of samples) max = Math.max(max, p[s.key]);
  max = max > 0 ? max * 1.15 : 1;
  ctx.strokeStyle = "#d8dce5";
  ctx.fillStyle = "#6b7385";
  ctx.font = "10px system-ui";
  for (let i = 0; i <= 2; i++) {
    const y = pad / 2 + ((h - pad) * i) / 2;
    ctx.beginPath(); ctx.moveTo(pad, y); ctx.lineTo(w, y); ctx.stroke();
    const v = max * (1 - i / 2);
    ctx.fillText(v >= 10 ? v.toFixed(0) : v.toFixed(2), 0, y + 3);
  }
  // One point per second: at least a minute across, up to the five minutes kept.
  const n = Math.max(60, samples.length);
  series.forEach((s, k) => {
    ctx.strokeStyle = s.color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    samples.forEach((p, i) => {
      const x = pad + ((w - pad) * (n - samples.length + i)) / (n - 1);
      const y = pad / 2 + (h - pad) * (1 - p[s.key] / max);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
    ctx.fillStyle = s.color;
    const last = samples.length ? samples[samples.length - 1][s.key] : 0;
    ctx.fillText(s.label + " " + (last >= 10 ? last.toFixed(0) : last.toFixed(2)), pad + 4 + k * 130, h - 2);
  });
}

function renderHistory(data) {
  const samples = data.samples;
  drawChart(document.getElementById("chart-commit"), samples, [{ key: "commit_ms", label: "now", color: "#2457c5" }]);
  drawChart(document.getElementById("chart-fsync"), samples, [{ key: "fsync_ms", label: "now", color: "#a86200" }]);
  drawChart(document.getElementById("chart-writes"), samples, [
    { key: "applied_per_s", label: "applied/s", color: "#1f7a3a" },
    { key: "syncs_per_s", label: "syncs/s", color: "#b3261e" }]);
}

// ---- node tree ---------------------------------------------------------------------------------

async function showNode(path) {
  const data = await getJson("/api/nodes?path=" + encodeURIComponent(path));
  const crumbs = document.getElementById("tree-path");
  const parts = path.split("/").filter((p) => p);
  const links = [el("a", { onclick: () => showNode("/") }, "/")];
  parts.forEach((p, i) => {
    const to = "/" + parts.slice(0, i + 1).join("/");
    links.push(el("a", { onclick: () => showNode(to) }, p), i + 1 < parts.length ? "/" : "");
  });
  crumbs.replaceChildren(...links);
  const list = document.getElementById("tree-children");
  const node = document.getElementById("tree-node");
  if (data.error) {
    list.replaceChildren();
    node.textContent = data.error + ": " + path;
    return;
  }
  const children = data.children.map((name) => {
    const to = (path === "/" ? "" : path) + "/" + name;
    return el("li", {}, el("a", { onclick: () => showNode(to) }, name));
  });
  if (data.more) children.push(el("li", { class: "muted" }, data.more + " more"));
  list.replaceChildren(...children);
  const st = data.stat;
  node.textContent = path + "  (" + data.kind + ")\n" +
    "version " + st.version + " · " + st.num_children + " children · " + st.data_length + " bytes" +
    (st.ephemeral_owner ? " · owned by session s" + st.ephemeral_owner : "") +
    "\ncreated at zxid " + st.czxid + ", modified at " + st.mzxid + "\n\n" +
    (data.data_hidden ? "(data not shown: " + data.data_hidden + ")"
                      : data.data + (data.data_cut ? "\n… (cut at 1 KiB)" : ""));
}

// ---- polling -----------------------------------------------------------------------------------

async function poll() {
  const prefix = document.getElementById("lock-prefix").value;
  try {
    const [cluster, locks, sessions] = await Promise.all([
      getJson("/api/cluster"),
      getJson("/api/locks?limit=200&prefix=" + encodeURIComponent(prefix)),
      getJson("/api/sessions?limit=200")]);
    renderCluster(cluster);
    renderLocks(locks);
    renderSessions(sessions);
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (err) {
    document.getElementById("updated").textContent = "cannot reach the node: " + err.message;
  }
}

async function pollHistory() {
  try {
    renderHistory(await getJson("/api/history"));
  } catch (err) {
    // The main poll says when the node is unreachable.
  }
}

getJson("/api/actions").then((a) => { actions = a; }).catch(() => {});
poll();
pollHistory();
setInterval(poll, POLL_MS);
setInterval(pollHistory, 2000);
followFeed();
showNode("/").catch(() => {});
