/**
 * The playground's realtime speech in a real browser (D42, issue point 7): in the speech panel's "Stream
 * (realtime)" mode a typed text goes word by word over the text-to-speech socket
 * (`/v1/audio/speech/{voice_id}/stream-input`, the key in the query as a browser must send it) and its PCM
 * audio plays on an AudioContext as it arrives; at the end the page shows the characters billed, the cost
 * (the socket's usage record) and the balance after, which must be the balance before minus that cost. A
 * model without realtime support is refused, in words, and moves no money; Stop closes the socket and
 * what was spoken until then is what is charged. Role and label locators only.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Locator, Page } from "playwright-core";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

/** About 230 characters, 40 words: the first audio comes after some 50 characters, long before the last word. */
const TEXT =
  "The gateway streams speech as the text arrives. Every chunk is paid for before it is spoken, and the balance always equals the ledger. Voice agents keep one socket open for a whole call while the caller listens to every word.";

/** `alpha-flash-v2-5`: 0.20 USD per 1000 characters. */
const FLASH_USD_PER_CHAR = 0.0002;

/** `$19.9538` (formatUsd, en-US) as a number. */
function usd(text: string): number {
  const m = /-?\$[\d,]+(\.\d+)?/.exec(text);
  assert.ok(m, `no amount in ${JSON.stringify(text)}`);
  return Number(m[0].replace(/[$,]/g, ""));
}

/** Rounds to the micro-dollar (D7), so sums of decimals compare exactly. */
const micros = (amountUsd: number) => Math.round(amountUsd * 1e6);

describe("console playground: realtime speech", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let page: Page;
  before(async () => {
    h = await startConsole();
    page = await h.context.newPage();
  });
  after(async () => {
    await h?.close();
  });

  /** The balance as the API says it, for the user's key. */
  async function balance(apiKey: string): Promise<number> {
    const r = await h.gw.request("GET", "/v1/auth/me", { token: apiKey });
    assert.equal(r.status, 200);
    return r.json.balance_usd as number;
  }

  /** A fresh user with 20 USD, the playground's live key, the speech panel in stream mode. */
  async function streamPanel(): Promise<{ apiKey: string }> {
    const user = await h.signUp(page);
    await h.deposit(user.userId, 20);
    await page.goto(h.url("/playground"));
    await page.getByRole("heading", { level: 1, name: "Playground: speech" }).waitFor();
    await page.getByRole("radio", { name: /^Live/ }).check();
    await page.getByRole("button", { name: "Create the playground key" }).click();
    await page.getByText(/Calls use the key Console playground/).waitFor();
    await page.getByRole("radio", { name: "Stream (realtime)" }).check();
    return { apiKey: user.apiKey };
  }

  async function pickRachel(): Promise<void> {
    await page.getByLabel("Search voices").fill("Rachel");
    const voice = page.getByLabel("Voice", { exact: true });
    const rachel = (await voice.getByRole("option", { name: /^Rachel/ }).first().textContent()) ?? "";
    await voice.selectOption({ label: rachel });
  }

  /** A value of the stream's list: its `<dd>`, labelled by its term. */
  const value = (panel: Locator, name: string) => panel.getByLabel(name, { exact: true });
  const count = async (panel: Locator, name: string) => Number.parseFloat((await value(panel, name).textContent()) ?? "");

  test("a typed text streams word by word, plays as it arrives, and costs exactly what the balance lost", async () => {
    const { apiKey } = await streamPanel();
    // The stream mode starts on a realtime model, and says which ones are.
    const model = page.getByLabel("Model");
    await model.getByRole("option", { name: "alpha-flash-v2-5 (realtime)" }).waitFor({ state: "attached" });
    await model.selectOption("alpha-flash-v2-5");
    await pickRachel();
    await page.getByLabel("Text to speak").fill(TEXT);
    const before = await balance(apiKey);

    await page.getByRole("button", { name: "Speak (stream)" }).click();
    const panel = page.getByRole("article", { name: "Realtime speech" });
    await panel.getByRole("status").filter({ hasText: "Streaming…" }).waitFor();
    // The first audio came while later words were still to be sent.
    await value(panel, "First audio").filter({ hasText: /^after/ }).waitFor();
    const first = /after (\d+) of (\d+) words/.exec((await value(panel, "First audio").textContent()) ?? "");
    assert.ok(first, "first audio reported");
    const total = TEXT.split(" ").length;
    assert.equal(Number(first[2]), total);
    assert.ok(Number(first[1]) < total, `the audio started after ${first[1]} of ${total} words`);
    // It plays while the text is still being written (the AudioContext's clock passes the first chunk's start).
    await page.waitForFunction(
      (el) => Number.parseFloat(el?.textContent ?? "0") > 0,
      await value(panel, "Played").elementHandle(),
      { timeout: 10_000 },
    );

    await panel.getByRole("status").filter({ hasText: /^Done/ }).waitFor({ timeout: 60_000 });
    assert.equal(await value(panel, "Words sent").textContent(), `${total} of ${total}`);
    const chunks = await count(panel, "Audio chunks");
    assert.ok(chunks > 1, `${chunks} audio chunks`);
    assert.ok((await count(panel, "Audio received")) > 5, "several seconds of speech");
    assert.equal(await count(panel, "Close code"), 1000);
    // The words came back with their alignment, in order.
    const spoken = ((await panel.getByRole("region", { name: "Spoken words" }).getByRole("paragraph").textContent()) ?? "").replace(/\s+/g, " ").trim();
    assert.equal(spoken, TEXT);

    // Every character sent is billed (each word with its trailing space: the last one's too), at the model's price.
    const billed = await count(panel, "Characters billed");
    assert.equal(billed, TEXT.length + 1);
    const cost = usd((await value(panel, "Cost").textContent()) ?? "");
    assert.equal(micros(cost), micros(billed * FLASH_USD_PER_CHAR));
    const status = (await panel.getByRole("status").textContent()) ?? "";
    assert.match(status, new RegExp(`^Done: ${billed} characters, \\$`));
    assert.equal(micros(usd(status)), micros(cost));
    // The balance went down by exactly that cost.
    const shown = usd((await value(panel, "Balance after").textContent()) ?? "");
    const afterApi = await balance(apiKey);
    assert.equal(micros(shown), micros(afterApi));
    assert.equal(micros(before) - micros(afterApi), micros(cost));
    // The request id leads to the socket's usage record.
    await value(panel, "Request id").getByRole("link", { name: /^req_/ }).waitFor();

    // A phone's width: the panel does not scroll sideways.
    await page.setViewportSize({ width: 375, height: 800 });
    const overflow = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
    assert.ok(overflow <= 0, `the stream panel is ${overflow} px wider than a phone`);
    if (process.env.CONSOLE_SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.CONSOLE_SCREENSHOT_DIR}/realtime-375.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    if (process.env.CONSOLE_SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.CONSOLE_SCREENSHOT_DIR}/realtime-1280.png`, fullPage: true });
  });

  test("a model without realtime support: the socket is refused, the page says why, nothing is charged", async () => {
    const { apiKey } = await streamPanel();
    await page.getByLabel("Model").selectOption("alpha-v3");
    // The panel warns before the try; the gateway is the judge.
    await page.getByText(/alpha-v3 has no realtime socket/).waitFor();
    await page.getByLabel("Voice", { exact: true }).locator("option").first().waitFor({ state: "attached" });
    await page.getByLabel("Text to speak").fill("This model has no socket.");
    const before = await balance(apiKey);
    await page.getByRole("button", { name: "Speak (stream)" }).click();
    const panel = page.getByRole("article", { name: "Realtime speech" });
    await panel.getByRole("status").filter({ hasText: "Failed" }).waitFor();
    const alert = panel.getByRole("alert");
    await alert.getByText(/The gateway refused the socket: alpha-v3 does not support realtime speech/).waitFor();
    await alert.getByText("The socket did not open.").waitFor();
    assert.equal(await value(panel, "Audio chunks").textContent(), "0");
    assert.equal(await balance(apiKey), before);
  });

  test("Stop closes the socket: the words spoken until then are what is charged", async () => {
    const { apiKey } = await streamPanel();
    await page.getByLabel("Model").selectOption("alpha-flash-v2-5");
    await pickRachel();
    await page.getByLabel("Writing pace").selectOption({ label: "Slow: about 2 words a second" });
    await page.getByLabel("Text to speak").fill(TEXT);
    const before = await balance(apiKey);
    await page.getByRole("button", { name: "Speak (stream)" }).click();
    const panel = page.getByRole("article", { name: "Realtime speech" });
    await value(panel, "First audio").filter({ hasText: /^after/ }).waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: "Stop" }).click();
    await panel.getByRole("status").filter({ hasText: /^Stopped/ }).waitFor();
    const sent = /^(\d+) of (\d+)$/.exec((await value(panel, "Words sent").textContent()) ?? "");
    assert.ok(sent && Number(sent[1]) < Number(sent[2]), "stopped before the last word");
    const billed = await count(panel, "Characters billed");
    assert.ok(billed > 0 && billed < TEXT.length, `${billed} characters billed`);
    const cost = usd((await value(panel, "Cost").textContent()) ?? "");
    assert.equal(micros(cost), micros(billed * FLASH_USD_PER_CHAR));
    assert.equal(micros(before) - micros(await balance(apiKey)), micros(cost));
    assert.equal(await page.getByRole("button", { name: "Stop" }).count(), 0);
  });
});
