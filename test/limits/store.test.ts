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

    test("hitAll counts in order and stops after the first window that refuses (it counted, later ones not)", async () => {
      assert.deepEqual(await store.hitAll([]), []);
      const all = await store.hitAll([
        { key: "ha:a", limit: 2 },
        { key: "ha:b", limit: 1 },
        { key: "ha:t", limit: 100, cost: 40 },
      ]);
      assert.deepEqual(all.map((h) => [h.allowed, h.count]), [[true, 1], [true, 1], [true, 40]]);
      for (const h of all) assert.ok(h.resetMs > 0 && h.resetMs <= 60_000);
      // ha:b is full: counted (2, refused), ha:t after it untouched.
      const stopped = await other.hitAll([
        { key: "ha:a", limit: 2 },
        { key: "ha:b", limit: 1 },
        { key: "ha:t", limit: 100, cost: 40 },
      ]);
      assert.deepEqual(stopped.map((h) => [h.allowed, h.count]), [[true, 2], [false, 2]]);
      assert.equal((await store.peek("ha:t")).count, 40);
      // The first window refusing: nothing after it is counted.
      const first = await store.hitAll([{ key: "ha:a", limit: 2 }, { key: "ha:c", limit: 5 }]);
      assert.deepEqual(first.map((h) => [h.allowed, h.count]), [[false, 3]]);
      assert.equal((await store.peek("ha:c")).count, 0);
    });

    test("hitAll, hit and peek share the same counters and expiry", async () => {
      await store.hit("ha:x", 10, 3);
      const [h] = await other.hitAll([{ key: "ha:x", limit: 10, cost: 2 }]);
      assert.equal(h.count, 5);
      const peeked = await store.peek("ha:x");
      assert.equal(peeked.count, 5);
      assert.ok(Math.abs(peeked.resetMs - h.resetMs) < 1000, `same window: ${peeked.resetMs} vs ${h.resetMs}`);
      const next = await other.hit("ha:x", 5);
      assert.deepEqual([next.allowed, next.count], [false, 6]);
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

describe("redis hitAll: one round trip, rate-limiter-flexible's keys", { skip: REDIS_SKIP }, () => {
  const prefix = `gwtest:${randomBytes(4).toString("hex")}`;
  const redis = new Redis(REDIS_TEST_URL);
  const store = new RedisLimitStore(redis, prefix);
  after(() => store.close());

  test("one command for any number of windows, once the script is loaded", async () => {
    await store.hitAll([{ key: "warm", limit: 1 }]);
    const sent: string[] = [];
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = ((cmd: Parameters<typeof send>[0]) => {
      sent.push(cmd.name);
      return send(cmd);
    }) as typeof redis.sendCommand;
    try {
      const hits = await store.hitAll([
        { key: "krpm:k1", limit: 5 },
        { key: "rpm:a1", limit: 5 },
        { key: "mrpm:a1:m", limit: 5 },
        { key: "tpm:a1", limit: 5000, cost: 1200 },
      ]);
      assert.equal(hits.length, 4);
      assert.deepEqual(sent, ["evalsha"]);
    } finally {
      redis.sendCommand = send;
    }
  });

  test("the counter is RateLimiterRedis's: key `<prefix>:win:<key>`, an integer, a 60 s expiry", async () => {
    await store.hitAll([{ key: "tpm:a2", limit: 5000, cost: 7 }]);
    assert.equal(await redis.get(`${prefix}:win:tpm:a2`), "7");
    const ttl = await redis.pttl(`${prefix}:win:tpm:a2`);
    assert.ok(ttl > 59_000 && ttl <= 60_000, String(ttl));
    // A counter left without expiry gets the window's, as RateLimiterRedis gives it.
    await redis.set(`${prefix}:win:rpm:a2`, "3");
    const [h] = await store.hitAll([{ key: "rpm:a2", limit: 10 }]);
    assert.deepEqual([h.count, h.resetMs], [4, 60_000]);
    assert.ok((await redis.pttl(`${prefix}:win:rpm:a2`)) > 59_000);
    await assert.rejects(store.hitAll([{ key: "tpm:a2", limit: 10, cost: 1.5 }]), /integer/);
  });
});
