import assert from "node:assert/strict";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import { getHeapSpaceStatistics } from "node:v8";
import { compactHeap, compactWhenIdle } from "../src/memory.ts";

const newSpaceBytes = (): number => getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.space_size ?? 0;

/** Waits (at most `limitMs`, a liveness bound, not a timing assertion) until `ok()` holds. */
async function until(ok: () => boolean, limitMs = 20_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await sleep(10);
  }
}

test("compactHeap shrinks the young generation that a burst of allocation grew, without exposing gc", () => {
  let kept: { i: number }[] = [];
  for (let round = 0; round < 4; round++) {
    kept = [];
    for (let i = 0; i < 500_000; i++) kept.push({ i });
  }
  assert.equal(kept.length, 500_000);
  kept = [];
  const grown = newSpaceBytes();
  const delta = compactHeap();
  assert.equal(typeof delta, "number");
  assert.ok(newSpaceBytes() < grown, `new space ${newSpaceBytes()} not below ${grown}`);
  assert.equal((globalThis as { gc?: unknown }).gc, undefined);
});

test("compactWhenIdle compacts at start, after a quiet period that followed requests, never with a request in flight", async (t) => {
  let release: (() => void) | null = null;
  const server: Server = createServer((req, res) => {
    if (req.url === "/hold") release = () => res.end("held");
    else res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;
  const get = (path: string) =>
    new Promise<string>((resolve, reject) => {
      request({ port, host: "127.0.0.1", path, agent: false }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve(body));
      })
        .on("error", reject)
        .end();
    });

  const idle = compactWhenIdle(server, 40);
  t.after(() => idle.stop());
  assert.equal(idle.compactions(), 1, "one collection at start");

  // No request since the start: quiet periods pass without another collection.
  await sleep(200);
  assert.equal(idle.compactions(), 1);

  // A request in flight holds compaction off, however long it lasts.
  const held = get("/hold");
  await until(() => release !== null);
  await sleep(300);
  assert.equal(idle.compactions(), 1, "no collection while a request is in flight");
  (release as unknown as () => void)();
  assert.equal(await held, "held");

  // Once it has ended and the server has been quiet, exactly one more collection runs.
  await until(() => idle.compactions() === 2);
  await sleep(300);
  assert.equal(idle.compactions(), 2, "one collection per busy period");

  assert.equal(await get("/"), "ok");
  await until(() => idle.compactions() === 3);
});
