// What the console's browser tests share: headless Chromium (Debian's, driven by puppeteer-core),
// checks that print what held, and polling until the page shows something.
"use strict";
const puppeteer = require("puppeteer-core");

function check(ok, what) {
  if (!ok) throw new Error("FAILED: " + what);
  console.log("ok: " + what);
}

async function waitFor(what, fn, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > end) throw new Error("FAILED: " + what + " within " + timeoutMs + " ms");
    await new Promise((r) => setTimeout(r, 25));
  }
}

function launch() {
  return puppeteer.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}

module.exports = { check, waitFor, launch };
