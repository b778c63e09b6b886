// The console's action buttons in headless Chromium (console_test.sh): on a node started with
// --console-actions on, the holder of LOCK gets a "force release" button; clicking it and
// accepting the confirmation takes the hold away, as the page then shows.
//
//   node actions_test.js ADMIN_URL LOCK SESSION TOKEN SCREENSHOT_DIR
"use strict";
const { check, waitFor, launch } = require("./browser");
const path = require("path");

const [adminUrl, lock, session, token, shotDir] = process.argv.slice(2);

(async () => {
  const browser = await launch();
  try {
    const page = await browser.newPage();
    const errors = [];
    const dialogs = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("dialog", async (d) => { dialogs.push(d.message()); await d.accept(); });
    await page.goto(adminUrl + "/", { waitUntil: "domcontentloaded" });
    const button = await waitFor("the holder's force-release button", () => page.evaluateHandle((name, s) => {
      const row = [...document.querySelectorAll("#locks tbody tr")]
        .find((tr) => tr.querySelector(".lock-name")?.textContent === name);
      const holder = row && [...row.querySelectorAll(".holder")].find((h) => h.dataset.session === s);
      return holder ? holder.querySelector("button.action") : null;
    }, lock, session).then((h) => h.asElement()), 5000);
    await page.setViewport({ width: 1500, height: 900 });
    await page.screenshot({ path: path.join(shotDir, "console-actions.png") });
    await button.click();
    await waitFor("the lock without its holder", () => page.evaluate((name) =>
      ![...document.querySelectorAll("#locks tbody tr")].some(
        (tr) => tr.querySelector(".lock-name")?.textContent === name &&
                tr.querySelector(".holder") !== null), lock), 5000);
    check(dialogs.length === 2 && dialogs[0].includes("token " + token) &&
          dialogs[1].startsWith("done at index"),
          "the button asked first, then said it was done: " + JSON.stringify(dialogs));
    await waitFor("the revoke in the live feed", () => page.evaluate((name) =>
      [...document.querySelectorAll('#feed li[data-kind="revoke"]')].some(
        (li) => li.innerText.includes("lock " + name)), lock), 3000);
    check(errors.length === 0, "no script errors in the page: " + JSON.stringify(errors));
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
