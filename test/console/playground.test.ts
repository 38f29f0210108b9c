/**
 * The playground journey in a real browser (issue 15): register, an operator deposit, open the playground,
 * create its key (kept in this browser, listed on the Keys page), speak a sentence and get playable audio,
 * submit an image job and see the image, stream a chat answer; a refused key offers a new one, and a call
 * the balance cannot pay says "top up". Role and label locators only.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { browserSkip, type ConsoleHarness, startConsole } from "./harness.ts";

/** What the journey reads of an `<audio>` element (the test's tsconfig has no DOM types). */
interface AudioElementLike {
  readyState: number;
  duration: number;
  error: { code: number } | null;
  addEventListener(type: string, listener: () => void, options?: { once: boolean }): void;
}

/** What the journey reads of an `<img>` element. */
interface ImageElementLike {
  complete: boolean;
  naturalWidth: number;
}

describe("console playground", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  let page: Page;
  before(async () => {
    h = await startConsole();
    page = await h.context.newPage();
  });
  after(async () => {
    await h?.close();
  });

  test("speak, an image job, a streamed chat answer, with the playground's own live key", async () => {
    const user = await h.signUp(page);
    await h.deposit(user.userId, 20);
    await page.goto(h.url("/playground"));
    await page.getByRole("heading", { level: 1, name: "Playground: speech" }).waitFor();
    await page.getByRole("radio", { name: /^Live/ }).check();
    await page.getByRole("button", { name: "Create the playground key" }).click();
    await page.getByText(/Calls use the key Console playground/).waitFor();

    // Speech: a voice from the picker, a sentence, playable audio with its cost and request id.
    await page.getByLabel("Model").selectOption("alpha-multilingual-v2");
    await page.getByLabel("Search voices").fill("Rachel");
    const voice = page.getByLabel("Voice", { exact: true });
    const rachel = (await voice.getByRole("option", { name: /^Rachel/ }).first().textContent()) ?? "";
    await voice.selectOption({ label: rachel });
    await page.getByLabel("Text to speak").fill("Hello from the playground.");
    await page.getByText("26 / 5,000 characters").waitFor();
    await page.getByRole("button", { name: "Generate speech" }).click();
    const player = page.getByRole("article", { name: "Generated speech" });
    await player.waitFor();
    const duration = (await player.locator("audio").evaluate(
      (node) =>
        new Promise<number>((resolve, reject) => {
          const el = node as unknown as AudioElementLike;
          if (el.readyState >= 1) return resolve(el.duration);
          el.addEventListener("loadedmetadata", () => resolve(el.duration), { once: true });
          el.addEventListener("error", () => reject(new Error(`audio error ${el.error?.code}`)), { once: true });
        }),
    )) as number;
    assert.ok(duration > 0, `audio duration ${duration}`);
    await player.getByText(/^req_/).waitFor();
    await player.getByText(/^\$0\.0\d+/).first().waitFor();
    await player.getByRole("link", { name: /^Download speech-req_.*\.mp3$/ }).waitFor();

    // Image: submitted, followed to the end, shown.
    await page.getByRole("navigation", { name: "Playground tools" }).getByRole("link", { name: "Image and video" }).click();
    await page.getByRole("heading", { level: 1, name: "Playground: image and video" }).waitFor();
    await page.getByLabel("Image model").selectOption("imgA-v4");
    await page.getByLabel("Prompt").fill("a lighthouse at dusk");
    await page.getByRole("button", { name: "Submit the image job" }).click();
    await page.getByRole("status").filter({ hasText: "Done" }).waitFor();
    const image = page.getByRole("img", { name: /a lighthouse at dusk/ });
    await image.waitFor();
    await page.waitForFunction((el) => (el as unknown as ImageElementLike).complete, await image.elementHandle());
    const width = (await image.evaluate((el) => (el as unknown as ImageElementLike).naturalWidth)) as number;
    assert.ok(width > 0, `image naturalWidth ${width}`);
    await page.getByRole("link", { name: "See the job" }).waitFor();

    // Chat: the answer streams in, then its usage and cost.
    await page.getByRole("link", { name: "Chat" }).click();
    await page.getByRole("heading", { level: 1, name: "Playground: chat" }).waitFor();
    await page.getByLabel("Chat model").selectOption("txtA-small");
    await page.getByLabel("Message").fill("Say hello");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.getByRole("log", { name: "Conversation" }).getByRole("article", { name: "Assistant" });
    // The simulator's answer quotes the question.
    await answer.getByText(/You asked: "Say hello"/).waitFor();
    const usage = page.getByRole("definition").filter({ hasText: /^\$0\.\d+$/ });
    await usage.waitFor();
    assert.ok(((await answer.textContent()) ?? "").length > "Assistant".length + 5);

    // The key is an ordinary key: listed on the Keys page.
    await page.goto(h.url("/keys"));
    await page.getByRole("row").filter({ hasText: "Console playground" }).waitFor();
  });

  test("a revoked playground key: the page says so and offers a new one; a test key moves no money", async () => {
    await h.signUp(page);
    await page.goto(h.url("/playground/audio"));
    await page.getByRole("button", { name: "Create the playground key" }).click();
    await page.getByText(/Calls use the key Console playground/).waitFor();
    await page.goto(h.url("/keys"));
    const row = page.getByRole("row").filter({ hasText: "Console playground" });
    await row.getByRole("button", { name: /^Revoke Console playground/ }).click();
    await page.getByRole("dialog", { name: "Revoke this key?" }).getByRole("button", { name: "Revoke key" }).click();
    await row.waitFor({ state: "detached" });

    await page.goto(h.url("/playground/audio"));
    await page.getByRole("heading", { level: 2, name: "The playground key no longer works" }).waitFor();
    // Test mode is the default choice.
    await page.getByRole("button", { name: "Create the playground key" }).click();
    await page.getByText(/Calls use the key Console playground/).waitFor();
    await page.getByLabel("Sound effect prompt").fill("a door creaking open");
    await page.getByRole("button", { name: "Generate sound effect" }).click();
    const player = page.getByRole("article", { name: "Generated sound effect" });
    await player.getByText("(test key: no money moved)").waitFor();

    // Signing out forgets the playground key kept in this browser (the key stays on the account).
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    const kept = await page.evaluate("Object.keys(localStorage).filter((k) => k.includes('playground-key')).length");
    assert.equal(kept, 0);
  });

  test("a call the balance cannot pay says top up, with a link to the balance", async () => {
    await h.signUp(page);
    await page.goto(h.url("/playground/audio"));
    await page.getByRole("radio", { name: /^Live/ }).check();
    await page.getByRole("button", { name: "Create the playground key" }).click();
    // 300 s of alpha-music is 40.50 USD; the signup credit is 0.50.
    await page.getByLabel("Music model").selectOption("alpha-music");
    await page.getByLabel("Music prompt").fill("a long calm piano piece");
    await page.getByLabel("Length (seconds, 1 to 300)").fill("300");
    await page.getByRole("button", { name: "Generate music" }).click();
    const alert = page.getByRole("alert");
    await alert.getByRole("link", { name: "top up your balance" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
  });
});

describe("console playground at 375 px", { skip: browserSkip }, () => {
  let h: ConsoleHarness;
  before(async () => {
    h = await startConsole({ viewport: { width: 375, height: 800 } });
  });
  after(async () => {
    await h?.close();
  });

  test("no playground page scrolls sideways on a phone", async () => {
    const page = await h.context.newPage();
    await h.signUp(page);
    await page.goto(h.url("/playground"));
    await page.getByRole("button", { name: "Create the playground key" }).click();
    for (const path of ["/playground", "/playground/audio", "/playground/media", "/playground/chat"]) {
      await page.goto(h.url(path));
      await page.getByRole("heading", { level: 1 }).waitFor();
      await page.waitForLoadState("networkidle");
      const overflow = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
      assert.ok(overflow <= 0, `${path} is ${overflow} px wider than the screen`);
    }
  });
});
