// Drives headless Chromium against a node's web console (console_test.sh): a lock acquired with the
// CLI must appear with its holder and token, waiters in the order they queued, and the grant in
// the live feed within a second of the CLI printing it.
//
//   node console_test.js ADMIN_URL RAFTLOCK_CLI ENDPOINTS SCREENSHOT_DIR FOLLOWER_ADMIN_URL
"use strict";
const { check, waitFor, launch } = require("./browser");
const { execFileSync, spawn } = require("child_process");
const path = require("path");

const [adminUrl, cli, endpoints, shotDir, followerUrl] = process.argv.slice(2);
const LOCK = "orders/db-migration";
const FEED_MS_MAX = 1000;

function raftlock(...args) {
  const out = execFileSync(cli, ["--endpoints", endpoints, "--output", "json", ...args]);
  return JSON.parse(out.toString());
}

// A waiter: `raftlock acquire --wait` in the background, its JSON line collected when granted.
function startWaiter() {
  const child = spawn(cli, ["--endpoints", endpoints, "--output", "json", "acquire", LOCK,
                            "--ttl", "30s", "--wait", "20s"], { stdio: ["ignore", "pipe", "inherit"] });
  child.output = "";
  child.stdout.on("data", (d) => { child.output += d; });
  return child;
}

// The rows the page shows for LOCK, as the user sees them (text), not the data it was built from.
function lockRow(page) {
  return page.evaluate((name) => {
    const row = [...document.querySelectorAll("#locks tbody tr")]
      .find((tr) => tr.querySelector(".lock-name")?.textContent === name);
    if (!row) return null;
    return {
      holders: [...row.querySelectorAll(".holder")].map((h) => h.innerText),
      waiters: [...row.querySelectorAll(".waiter")].map((w) => w.innerText),
    };
  }, LOCK);
}

(async () => {
  const browser = await launch();
  const waiters = [];
  try {
    const page = await browser.newPage();
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    page.on("console", (m) => { if (m.type() === "error") pageErrors.push(m.text()); });
    await page.setViewport({ width: 1500, height: 1200 });
    await page.goto(adminUrl + "/", { waitUntil: "domcontentloaded" });

    const members = await waitFor("three members, one of them the leader", () => page.evaluate(() => {
      const rows = [...document.querySelectorAll("#members tbody tr")].map((r) => r.innerText);
      return rows.length === 3 && rows.some((r) => r.includes("leader")) ? rows : null;
    }), 10000);
    check(members.filter((r) => r.includes("replicating") || r.includes("this node")).length === 3,
          "every member is healthy as the leader sees it: " + JSON.stringify(members));

    // The grant: the CLI prints it once it applied; the feed must show it within a second.
    const held = raftlock("acquire", LOCK, "--ttl", "30s");
    const printed = Date.now();
    const feedLine = await waitFor("the grant in the live feed", () => page.evaluate((lock, token) =>
      [...document.querySelectorAll('#feed li[data-kind="grant"]')]
        .map((li) => li.innerText)
        .find((t) => t.includes("lock " + lock) && t.includes("token " + token)),
      LOCK, held.token), 3000);
    const feedMs = Date.now() - printed;
    check(feedMs <= FEED_MS_MAX, `the grant reached the live feed in ${feedMs} ms (<= ${FEED_MS_MAX}): ${feedLine}`);

    const holder = await waitFor("the lock with its holder", async () => {
      const row = await lockRow(page);
      return row && row.holders.length === 1 ? row.holders[0] : null;
    }, 3000);
    check(holder.includes("s" + held.session) && holder.includes("token " + held.token),
          `the holder shows session ${held.session} and token ${held.token}: "${holder}"`);

    // Two waiters, the second queued after the first: shown in that order.
    waiters.push(startWaiter());
    await waitFor("the first waiter", async () => (await lockRow(page))?.waiters.length === 1, 5000);
    waiters.push(startWaiter());
    const queued = await waitFor("the second waiter", async () => {
      const row = await lockRow(page);
      return row && row.waiters.length === 2 ? row.waiters : null;
    }, 5000);
    const sessionOf = (text) => Number(/s(\d+)/.exec(text.replace(/^\d+\.\s*/, ""))[1]);
    check(queued[0].startsWith("1.") && queued[1].startsWith("2."), "waiters are numbered: " + JSON.stringify(queued));
    check(sessionOf(queued[0]) < sessionOf(queued[1]) && sessionOf(queued[0]) !== held.session,
          "the waiter that queued first is first");
    const sessions = await page.evaluate(() =>
      [...document.querySelectorAll("#sessions tbody tr")].map((r) => r.innerText));
    // On the leader each row's time left is a duration ("27.1 s"), not "ask the leader".
    check([held.session, sessionOf(queued[0]), sessionOf(queued[1])].every(
      (s) => sessions.some((r) => r.split("\t")[0] === "s" + s && /^\d+\.\d s$/.test(r.split("\t")[3]))),
          "the three sessions are listed with time left: " + JSON.stringify(sessions));

    await page.screenshot({ path: path.join(shotDir, "console-overview.png"), fullPage: true });
    await (await page.$("#locks-section")).screenshot({ path: path.join(shotDir, "console-locks.png") });

    // The holder lets go: the first waiter is granted, and the feed says so.
    raftlock("release", LOCK, "--session", String(held.session), "--token", String(held.token));
    const handed = await waitFor("the first waiter's grant", () => {
      const line = waiters[0].output.trim();
      return line ? JSON.parse(line) : null;
    }, 5000);
    check(handed.session === sessionOf(queued[0]), "the first waiter got the lock");
    await waitFor("the release and the hand-off in the feed", () => page.evaluate((lock, token) => {
      const lines = [...document.querySelectorAll("#feed li")].map((li) => li.innerText);
      return lines.some((t) => t.includes("release") && t.includes("lock " + lock)) &&
             lines.some((t) => t.includes("grant") && t.includes("token " + token));
    }, LOCK, handed.token), 3000);
    const after = await waitFor("the new holder", async () => {
      const row = await lockRow(page);
      return row && row.holders.length === 1 && row.holders[0].includes("token " + handed.token) ? row : null;
    }, 3000);
    check(after.waiters.length === 1 && after.waiters[0].startsWith("1."), "the second waiter moved up");
    // Let a few chart samples in, then the feed and the charts.
    await new Promise((r) => setTimeout(r, 2500));
    await (await page.$("#feed-section")).screenshot({ path: path.join(shotDir, "console-feed.png") });
    await (await page.$("#charts-section")).screenshot({ path: path.join(shotDir, "console-charts.png") });
    check(pageErrors.length === 0, "no script errors in the page: " + JSON.stringify(pageErrors));

    // A follower's console: the same lock, and sessions whose time left only the leader knows.
    const follower = await browser.newPage();
    follower.on("pageerror", (e) => pageErrors.push(e.message));
    await follower.goto(followerUrl + "/", { waitUntil: "domcontentloaded" });
    const seen = await waitFor("the follower's view", () => follower.evaluate((name) => {
      const row = [...document.querySelectorAll("#locks tbody tr")]
        .find((tr) => tr.querySelector(".lock-name")?.textContent === name);
      const sessions = [...document.querySelectorAll("#sessions tbody tr")].map((r) => r.innerText);
      return row && sessions.length ? { holder: row.querySelector(".holder").innerText, sessions } : null;
    }, LOCK), 5000);
    check(seen.holder.includes("token " + handed.token) &&
          seen.sessions.every((r) => r.includes("ask the leader")),
          "a follower's console shows the holder, and leaves time left to the leader");
    check(pageErrors.length === 0, "no script errors on the follower's page: " + JSON.stringify(pageErrors));
  } finally {
    for (const w of waiters) w.kill();
    await browser.close();
  }
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
