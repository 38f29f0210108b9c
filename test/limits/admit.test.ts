/**
 * An audio call's admission (limits/limiter.ts `guardFor(...).admit`): the per-model window and the pool
 * slot are taken at once, in memory and in Redis. A call the window refuses leaves no slot taken; a call the
 * pool refuses was counted in the window (as when the two ran one after the other); a released slot is
 * free for the next call of the same process.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import { TIERS } from "../../src/catalog/tiers.ts";
import { AppError } from "../../src/errors.ts";
import { guardFor, Limiter, type RateHeaders } from "../../src/limits/limiter.ts";
import { type LimitStore, MemoryLimitStore, RedisLimitStore } from "../../src/limits/store.ts";
import { REDIS_SKIP, REDIS_TEST_URL } from "../helpers/backends.ts";

const quiet = { warn: () => {} };
const stores: { name: string; skip: string | false; make: () => LimitStore }[] = [
  { name: "memory", skip: false, make: () => new MemoryLimitStore() },
  { name: "redis", skip: REDIS_SKIP, make: () => new RedisLimitStore(new Redis(REDIS_TEST_URL), `gwtest:${randomBytes(4).toString("hex")}`) },
];

for (const kind of stores) {
  describe(`admission of an audio call, ${kind.name} store`, { skip: kind.skip }, () => {
    const opened: LimitStore[] = [];
    after(async () => {
      for (const s of opened) await s.close();
    });
    const setup = (perModelRpm: number, slots: number) => {
      const store = kind.make();
      opened.push(store);
      const limits = { ...TIERS[1]!, perModelRpm, audioConcurrentPerProvider: { ...TIERS[1]!.audioConcurrentPerProvider, alpha: slots } };
      const account = `acc_${randomBytes(4).toString("hex")}`;
      return { store, account, guard: guardFor(new Limiter(store, "closed", quiet), account, limits) };
    };
    const inUse = (store: LimitStore, account: string) => store.inUse(`audio:${account}:alpha`);
    const rateLimited = (message: RegExp) => (err: unknown) => err instanceof AppError && err.status === 429 && message.test(err.message);

    test("a call the window refuses takes no slot", async () => {
      const { store, account, guard } = setup(1, 5);
      const release = await guard.admit("alpha-flash-v2-5", "alpha");
      assert.equal(await inUse(store, account), 1);
      await assert.rejects(guard.admit("alpha-flash-v2-5", "alpha"), rateLimited(/requests per minute for alpha-flash-v2-5/));
      assert.equal(await inUse(store, account), 1, "only the first call's slot");
      await release();
      assert.equal(await inUse(store, account), 0);
    });

    test("a call the pool refuses is counted in the window; a released slot serves the next call", async () => {
      const { store, account, guard } = setup(3, 1);
      const first = await guard.admit("alpha-flash-v2-5", "alpha");
      await assert.rejects(guard.admit("alpha-flash-v2-5", "alpha"), rateLimited(/concurrent slots of the alpha audio pool/));
      await first();
      // The release is not awaited by the limiter, yet the next acquire of this process sees it.
      const third = await guard.admit("alpha-flash-v2-5", "alpha");
      assert.equal(await inUse(store, account), 1);
      await third();
      // Three calls counted: the window now refuses, whatever the pool.
      await assert.rejects(guard.admit("alpha-flash-v2-5", "alpha"), rateLimited(/requests per minute/));
      assert.equal(await inUse(store, account), 0);
    });

    test("a model outside the key's allow-list is refused before anything is counted", async () => {
      const store = kind.make();
      opened.push(store);
      const account = `acc_${randomBytes(4).toString("hex")}`;
      const guard = guardFor(new Limiter(store, "closed", quiet), account, { ...TIERS[1]!, perModelRpm: 1 }, ["beta-*"]);
      await assert.rejects(guard.admit("alpha-flash-v2-5", "alpha"), (err: unknown) => err instanceof AppError && err.status === 403);
      assert.equal(await inUse(store, account), 0);
      assert.equal((await store.peek(`mrpm:${account}:alpha-flash-v2-5`)).count, 0);
    });

    test("deferred request windows (D34 order): skipped for a refused model, counted once with the allowed one's window", async () => {
      const store = kind.make();
      opened.push(store);
      const account = `acc_${randomBytes(4).toString("hex")}`;
      const seen: string[] = [];
      let taken = false;
      const windows = {
        take: () => {
          if (taken) return undefined;
          taken = true;
          seen.push("take");
          return { key: null, headers: (h: RateHeaders) => void seen.push(`headers remaining=${h["X-RateLimit-Remaining"]}`) };
        },
        skip: () => void seen.push("skip"),
      };
      const guard = guardFor(new Limiter(store, "closed", quiet), account, { ...TIERS[1]!, rpm: 1, perModelRpm: 5 }, ["beta-*"], windows);
      await assert.rejects(guard.model("alpha-flash-v2-5"), (err: unknown) => err instanceof AppError && err.code === "model_not_allowed");
      assert.deepEqual(seen, ["skip"]);
      const release = await guard.admit("beta-speech-turbo", "beta");
      await release();
      assert.deepEqual(seen, ["skip", "take", "headers remaining=0"]);
      assert.equal((await store.peek(`rpm:${account}`)).count, 1);
      assert.equal((await store.peek(`mrpm:${account}:beta-speech-turbo`)).count, 1);
      // A second model call of the same request counts only its own window.
      await guard.model("beta-speech-turbo");
      assert.equal((await store.peek(`rpm:${account}`)).count, 1);
      assert.equal((await store.peek(`mrpm:${account}:beta-speech-turbo`)).count, 2);
    });
  });
}
