/**
 * `npm run screenshots [folder]`: screenshots of every console page at 1400 and 375 px wide, written as PNGs
 * to `folder` (default `console-screenshots/`, gitignored).
 *
 * It starts a gateway on loopback (temporary SQLite database, built-in simulator) through the browser-test
 * harness (test/console/harness.ts: the console is rebuilt when stale, Debian's Chromium drives it), seeds
 * an account with a deposit, speech and chat calls, an image job, a second key and one with controls (D34)
 * spending, a low-balance alert, signs in, and visits the
 * sign-in and register pages and then every link of the navigation, so pages added later are covered
 * without changing this script. The operator token is set too, so the operator group's pages appear, and
 * payments are on against the loopback Stripe fake (fakes/stripe.ts), so the billing page
 * shows its top-up form.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { startStripeFake } from "../fakes/stripe.ts";
import { DEMO_ALPHA_VOICE_ID } from "../src/upstreams/simulator/voices.ts";
import { ADMIN_TOKEN } from "../test/helpers/gateway.ts";
import { startConsole } from "../test/console/harness.ts";

const WIDTHS = [1400, 375] as const;
const outDir = resolve(process.argv[2] ?? "console-screenshots");
mkdirSync(outDir, { recursive: true });

/** `/` -> `overview`, `/jobs/:id` -> `jobs-id`: a file name for a console path. */
function slug(path: string, title: string): string {
  const s = path.replace(/^\/+|\/+$/g, "").replace(/[^a-z0-9]+/gi, "-").toLowerCase();
  return s || title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
}

/** Waits until the page has its heading and no request or busy indicator is left. */
async function settle(page: Page): Promise<void> {
  await page.getByRole("heading", { level: 1 }).first().waitFor();
  await page.waitForLoadState("networkidle");
  await page.locator('[aria-busy="true"]').first().waitFor({ state: "detached", timeout: 10_000 }).catch(() => {});
  // Chart.js draws on the next frame.
  await page.waitForTimeout(150);
}

async function shoot(page: Page, name: string, width: number): Promise<string> {
  const file = join(outDir, `${name}-${width}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** console/src/session.ts `PLAYGROUND_KEY_PREFIX` (that module needs a browser to load); the entry is `<user id>.<org id>` (playground/key.ts). */
const PLAYGROUND_KEY_PREFIX = "gateway.console.playground-key.";

// Payments on (D33), against the loopback Stripe fake, so the billing page shows its top-up form.
const STRIPE_KEY = "sk_test_consoleScreenshots0123456789";
const stripe = await startStripeFake({ apiKey: STRIPE_KEY });
const h = await startConsole({ viewport: { width: WIDTHS[0], height: 900 }, env: { STRIPE_SECRET_KEY: STRIPE_KEY, STRIPE_API_BASE: stripe.url } });
const written: string[] = [];
try {
  // The account and its history, through the API as a customer's programs would make it.
  const user = await h.gw.register();
  await h.deposit(user.user_id, 25);
  // The console's own reads count against the account's requests per minute (D15: every authenticated
  // request); a customer browses a few pages a minute, this script visits every page twice in about one.
  // A custom limit (D22, as load tests do) keeps the pages free of 429 notices.
  await fetch(`${h.gw.url}/v1/admin/users/${user.user_id}/limits`, {
    method: "PUT",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ rpm: 100000, per_model_rpm: 100000 }),
  });
  const api = h.gw.client(user.api_key);
  for (const input of ["Hello from the console screenshots.", "A second, somewhat longer sentence to speak aloud for the chart."]) {
    await api.POST("/v1/audio/speech", { body: { input, voice_id: DEMO_ALPHA_VOICE_ID }, parseAs: "arrayBuffer" });
  }
  await api.POST("/v1/chat/completions", { body: { model: "txtA-large", messages: [{ role: "user", content: "Say hello." }], max_tokens: 20 } });
  const job = await api.POST("/v1/images/generations", { body: { model: "imgA-v4", prompt: "a lighthouse at dusk, watercolour" } });
  if (job.data) await h.gw.waitForJob(user.api_key, job.data.id);
  const staging = await api.POST("/v1/auth/keys", { body: { name: "staging", mode: "test" } });
  // A test-mode image: the gallery and the job say "no money moved" for it.
  if (staging.data) {
    const testJob = await h.gw.client(staging.data.api_key).POST("/v1/images/generations", { body: { model: "imgA-v4", prompt: "a red fox in the snow" } });
    if (testJob.data) await h.gw.waitForJob(staging.data.api_key, testJob.data.id);
  }
  // A key with every control (D34), and what a call with it spent against its limit.
  const limited = await api.POST("/v1/auth/keys", {
    body: { name: "ci runner", spend_limit_usd: 0.05, spend_limit_period: "day", expires_at: new Date(Date.now() + 30 * 86_400_000).toISOString(), models: ["txtA-*"], rpm: 30 },
  });
  if (limited.data) {
    await h.gw.client(limited.data.api_key).POST("/v1/chat/completions", { body: { model: "txtA-large", messages: [{ role: "user", content: "Hi." }], max_tokens: 20 } });
  }
  await api.PUT("/v1/billing/alerts", { body: { low_balance_usd: 5 } });
  // Budgets (D44): a day budget in a far zone, a month one that only alerts; the key's limit lists too.
  await api.POST("/v1/budgets", { body: { scope: { type: "org", id: user.org_id }, amount_usd: 0.5, period: "day", timezone: "Asia/Tokyo" } });
  await api.POST("/v1/budgets", { body: { scope: { type: "member", id: user.user_id }, amount_usd: 20, period: "month", timezone: "Europe/Paris", action: "alert", thresholds: [80] } });
  // The playground's own key, as the playground would have made it, so its pages show their forms.
  const playgroundKey = await api.POST("/v1/auth/keys", { body: { name: "Console playground", mode: "test" } });
  // Pages reached from a list rather than from the navigation: one of each.
  const lastRequest = await api.GET("/v1/requests", { params: { query: { limit: "1" } } });
  const details: [string, string][] = [
    ["/playground/audio", "playground music and sound effects"],
    ["/playground/media", "playground image and video"],
    ["/playground/chat", "playground chat"],
    ...(job.data ? [[`/jobs/${job.data.id}`, "job detail"] as [string, string]] : []),
    ...(lastRequest.data?.data[0] ? [[`/usage/${lastRequest.data.data[0].id}`, "request detail"] as [string, string]] : []),
    [`/operator/accounts/${user.user_id}`, "operator account"],
  ];
  // A second account with nothing yet, for the empty states (and their next steps).
  const newcomer = await h.gw.register();
  await fetch(`${h.gw.url}/v1/admin/users/${newcomer.user_id}/limits`, {
    method: "PUT",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ rpm: 100000, per_model_rpm: 100000 }),
  });

  for (const width of WIDTHS) {
    const page = await h.context.newPage();
    await page.setViewportSize({ width, height: width === 375 ? 812 : 900 });
    // Signed out: the pages of the account menu.
    await page.goto(h.url("/"));
    await page.evaluate("localStorage.clear()");
    for (const path of ["/sign-in", "/register", "/operator/sign-in"]) {
      await page.goto(h.url(path));
      await settle(page);
      written.push(await shoot(page, slug(path, ""), width));
    }
    await h.signIn(page, user.email);
    await page.evaluate(`sessionStorage.setItem("gateway.console.operator", ${JSON.stringify(ADMIN_TOKEN)})`);
    if (playgroundKey.data) {
      const kept = { keyId: playgroundKey.data.key_id, secret: playgroundKey.data.api_key, mode: "test" };
      await page.evaluate(`localStorage.setItem(${JSON.stringify(`${PLAYGROUND_KEY_PREFIX}${user.user_id}.${user.org_id}`)}, ${JSON.stringify(JSON.stringify(kept))})`);
    }
    await page.reload();
    await settle(page);
    const links: [string, string][] = [];
    // includeHidden: under 900 px the navigation is a closed menu.
    for (const a of await page.getByRole("navigation", { name: "Main", includeHidden: true }).getByRole("link", { includeHidden: true }).all()) {
      const href = (await a.getAttribute("href")) ?? "/console/";
      // The console's pages only (not the API reference at /docs).
      if (href.startsWith("/console")) links.push([href, (await a.textContent()) ?? ""]);
    }
    for (const [href, label] of links) {
      await page.goto(new URL(href, h.gw.url).href);
      await settle(page);
      written.push(await shoot(page, slug(href.replace(/^\/console/, ""), label), width));
    }
    for (const [path, label] of details) {
      await page.goto(h.url(path));
      await settle(page);
      written.push(await shoot(page, slug("", label), width));
    }
    // States behind a click: the organization switcher's list, the create-key dialog, a gallery card's share
    // menu, the compact menu.
    await page.goto(h.url("/"));
    await settle(page);
    await page.getByRole("button", { name: /^Organization / }).click();
    await page.getByRole("link", { name: "All organizations" }).waitFor();
    written.push(await shoot(page, "switcher-open", width));
    await page.goto(h.url("/keys"));
    await settle(page);
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByRole("dialog", { name: "Create a key" }).waitFor();
    written.push(await shoot(page, "keys-create-dialog", width));
    await page.goto(h.url("/gallery"));
    await settle(page);
    await page.getByRole("button", { name: /^Share / }).first().click();
    written.push(await shoot(page, "gallery-share-menu", width));
    if (width === 375) {
      await page.goto(h.url("/"));
      await settle(page);
      await page.getByRole("button", { name: "Menu" }).click();
      written.push(await shoot(page, "menu-open", width));
    }
    // A new account's empty states.
    await page.getByRole("button", { name: "Sign out" }).click();
    await h.signIn(page, newcomer.email);
    for (const path of ["/", "/jobs", "/gallery", "/usage"]) {
      await page.goto(h.url(path));
      await settle(page);
      written.push(await shoot(page, `empty-${slug(path, "overview")}`, width));
    }
    await page.close();
  }
} finally {
  await h.close();
  await stripe.close();
}
console.log(`${written.length} screenshots in ${outDir}:\n${written.map((f) => `  ${f}`).join("\n")}`);
