/**
 * The browser-test harness of the web console (issue 15): a real gateway on loopback (its own temporary
 * SQLite file, test/helpers/gateway.ts), the console bundle rebuilt when `console/src` is newer than
 * `console/dist`, and Debian's Chromium (`/usr/bin/chromium`) driven headless by playwright-core with a
 * fresh profile.
 *
 * Without Chromium the browser tests skip (`browserSkip`), unless `REQUIRE_SERVICES=1` or `CI=true`, where a
 * missing browser fails the run (.ci/run installs it). Journeys use role and label locators only, as a user
 * (and a screen reader) finds things.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { buildConsole, consoleIsStale } from "../../scripts/build-console.ts";
import { servicesRequired } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

/** Debian's Chromium package (`apt-get install chromium`). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Flags of a quiet, headless Chromium in a container (no sandbox: tests run as root in CI). */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && servicesRequired) throw new Error(`Chromium is required (REQUIRE_SERVICES/CI) but ${CHROMIUM} is missing: apt-get install -y chromium`);
if (!hasChromium) console.log(`# console browser tests skipped: no ${CHROMIUM} (apt-get install -y chromium). Set REQUIRE_SERVICES=1 to fail instead.`);

/** `skip` option of a browser suite: a reason string when there is no Chromium, else false. */
export const browserSkip: string | false = hasChromium ? false : `no Chromium at ${CHROMIUM}`;

/** The password of every user the harness signs up. */
export const PASSWORD = "correct horse battery";

const ROOT = join(import.meta.dirname, "../..");
const LOCK = join(ROOT, ".tmp-console-build.lock");

/**
 * Builds the console when `console/dist` is missing or older than a source. Test files run in parallel, so
 * one builds while the others wait on a lock directory (a lock older than two minutes is a crashed build's).
 */
export async function ensureConsoleBuilt(): Promise<void> {
  for (;;) {
    if (!consoleIsStale()) return;
    try {
      mkdirSync(LOCK);
    } catch {
      if (Date.now() - statSync(LOCK, { throwIfNoEntry: false })!.mtimeMs > 120_000) rmSync(LOCK, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    try {
      if (consoleIsStale()) await buildConsole({ quiet: true });
      return;
    } finally {
      rmSync(LOCK, { recursive: true, force: true });
    }
  }
}

/** Launches Chromium headless on a fresh profile; `close()` quits it and deletes the profile. */
export async function launchBrowser(viewport = { width: 1280, height: 900 }): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), "console-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
    locale: "en-US",
    timezoneId: "UTC",
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface ConsoleHarness {
  gw: TestGateway;
  context: BrowserContext;
  /** The absolute URL of a console path (`/keys` -> `http://127.0.0.1:<port>/console/keys`). */
  url(path?: string): string;
  /** A new tab of the browser (sharing the profile's localStorage, so one session per harness at a time). */
  open(path?: string): Promise<Page>;
  /** Registers a fresh user through the register page of `page`; it stays signed in. */
  signUp(page: Page): Promise<{ email: string; userId: string; apiKey: string }>;
  /** Signs `page` in through the sign-in page. */
  signIn(page: Page, email: string): Promise<void>;
  /** Operator deposit (USD) through the operator API (D9). */
  deposit(userId: string, amountUsd: number): Promise<void>;
  close(): Promise<void>;
}

let emails = 0;

/** Starts a gateway (SQLite) and Chromium, after rebuilding the console if it is stale. */
export async function startConsole(opts: { viewport?: { width: number; height: number }; env?: Record<string, string> } = {}): Promise<ConsoleHarness> {
  await ensureConsoleBuilt();
  const gw = await startGateway("sqlite", opts.env ?? {});
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  try {
    browser = await launchBrowser(opts.viewport);
  } catch (err) {
    await gw.close();
    throw err;
  }
  const url = (path = "/") => `${gw.url}/console${path}`;
  const open = async (path = "/") => {
    const page = await browser.context.newPage();
    await page.goto(url(path));
    return page;
  };
  return {
    gw,
    context: browser.context,
    url,
    open,
    async signUp(page) {
      const email = `console${++emails}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
      await page.goto(url("/register"));
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Create account" }).click();
      const apiKey = await page.getByRole("textbox", { name: "Your first API key" }).inputValue();
      const userId = (await page.evaluate("JSON.parse(localStorage.getItem('gateway.console.session')).userId")) as string;
      return { email, userId, apiKey };
    },
    async signIn(page, email) {
      await page.goto(url("/sign-in"));
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    },
    deposit: (userId, amountUsd) => gw.deposit(userId, amountUsd),
    async close() {
      await browser.close();
      await gw.close();
    },
  };
}
