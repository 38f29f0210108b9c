/**
 * The limit stores: fixed one-minute windows and concurrency pools, in memory and in Redis (shared by
 * every process), including slots of a dead process expiring.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { type LimitStore, MemoryLimitStore, RedisLimitStore } from "../../src/limits/store.ts";
import { REDIS_SKIP, REDIS_TEST_URL } from "../helpers/backends.ts";

const kinds: { name: string; skip: string | false; make: () => { store: LimitStore; other: () => LimitStore } }[] = [
  { name: "memory", skip: false, make: () => { const s = new MemoryLimitStore(); return { store: s, other: () => s }; } },
  {
    name: "redis",
    skip: REDIS_SKIP,
    make: () => {
      const prefix = `gwtest:${randomBytes(4).toString("hex")}`;
      return {
        store: new RedisLimitStore(new Redis(REDIS_TEST_URL), prefix),
        // A second client, as a second process would have.
        other: () => new RedisLimitStore(new Redis(REDIS_TEST_URL), prefix),
      };
    },
  },
];

for (const kind of kinds) {
  describe(`${kind.name} limit store`, { skip: kind.skip }, () => {
    let store: LimitStore;
    let other: LimitStore;
    before(() => {
      const made = kind.make();
      store = made.store;
      other = made.other();
    });
    after(async () => {
      await store?.close();
      if (other !== store) await other?.close();
    });

    test("a window allows exactly the limit, across clients", async () => {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? store : other).hit("rpm:u1", 7)));
      assert.equal(results.filter((r) => r.allowed).length, 7);
      const last = await store.hit("rpm:u1", 7);
      assert.equal(last.allowed, false);
      assert.ok(last.resetMs > 0 && last.resetMs <= 60_000);
      assert.equal((await store.peek("rpm:u1")).count, 21);
      assert.equal((await store.peek("rpm:unknown")).count, 0);
    });

    test("token windows count their cost", async () => {
      assert.equal((await store.hit("tpm:u1", 1000, 600)).allowed, true);
      assert.equal((await store.hit("tpm:u1", 1000, 400)).allowed, true);
      assert.equal((await store.hit("tpm:u1", 1000, 1)).allowed, false);
    });

    test("a pool never goes over its cap; release and refresh", async () => {
      const tokens = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? store : other).acquire("p1", 3, 10_000)));
      const got = tokens.filter((t): t is string => t !== null);
      assert.equal(got.length, 3);
      assert.equal(await store.inUse("p1"), 3);
      await store.release("p1", got[0]);
      await store.release("p1", got[0]);
      assert.equal(await other.inUse("p1"), 2);
      assert.notEqual(await store.acquire("p1", 3, 10_000), null);
      assert.equal(await store.acquire("p1", 3, 10_000), null);
      await store.refresh("p1", got[1], 10_000);
      assert.equal(await store.inUse("p1"), 3);
    });

    test("slots of a process that died expire", async () => {
      const t = await other.acquire("p2", 1, 150);
      assert.notEqual(t, null);
      assert.equal(await store.acquire("p2", 1, 150), null);
      await new Promise((r) => setTimeout(r, 250));
      assert.notEqual(await store.acquire("p2", 1, 10_000), null);
    });
  });
}
