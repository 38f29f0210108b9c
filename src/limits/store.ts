/**
 * Where request windows and concurrency pools live (docs/architecture.md "limits/"): in this process by default,
 * or in Redis (`REDIS_URL`) so that every gateway and worker process shares them.
 *
 * - Windows (RPM, per-model RPM, TPM) are fixed one-minute windows kept by rate-limiter-flexible
 *   (`RateLimiterMemory` / `RateLimiterRedis`, atomic increments). Each account has its own limit, so the
 *   limiter counts and this module compares the count with the caller's limit. `hitAll` counts the
 *   windows of one call in order in one round trip (in Redis one script on the same counters, issue 33).
 * - Pools are sets of slot tokens with an expiry (a Redis sorted set scored by expiry time, changed only by
 *   the Lua scripts below): a slot is always given back by `release`, and a slot of a process that died
 *   expires after its time to live.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterRes } from "rate-limiter-flexible";

/** The outcome of counting one request in a window. */
export interface WindowHit {
  /** The request fits in the limit. */
  allowed: boolean;
  /** Requests (or tokens) counted in the current window, this one included. */
  count: number;
  /** ms until the window resets. */
  resetMs: number;
}

/** One window of a {@link LimitStore.hitAll}: `cost` (requests or tokens, an integer; default 1) against `key` within `limit`. */
export interface WindowCount {
  key: string;
  limit: number;
  cost?: number;
}

/** Counters and pools shared by the processes that use the same store. */
export interface LimitStore {
  /**
   * Counts `cost` (requests or tokens) against `key` in a 60-second fixed window and tells whether the
   * total stays within `limit`. Counted even when refused (a client hammering stays refused).
   */
  hit(key: string, limit: number, cost?: number): Promise<WindowHit>;
  /**
   * Counts each window of `windows` in order as {@link hit} does (the same counters: {@link peek} and
   * {@link hit} read and add to them) and stops after the first one that refuses: that one is counted, the
   * ones after it are not. Returns the hits made, in order (all of them, or up to and including the
   * refusing one). In Redis one script, so one round trip whatever the number of windows (issue 33).
   */
  hitAll(windows: readonly WindowCount[]): Promise<WindowHit[]>;
  /** The current count of `key` without changing it. */
  peek(key: string): Promise<{ count: number; resetMs: number }>;
  /**
   * Like {@link hit}, in a fixed window of `windowS` seconds instead of 60 (failed logins,
   * registrations: issue "Hardening" 5). Keys of different window lengths never mix.
   */
  hitWindow(key: string, limit: number, windowS: number, cost?: number): Promise<WindowHit>;
  /** The current count of `key` in its `windowS` window, without changing it. */
  peekWindow(key: string, windowS: number): Promise<{ count: number; resetMs: number }>;
  /** Forgets `key` in its `windowS` window (a successful login clears its failures). */
  resetWindow(key: string, windowS: number): Promise<void>;
  /** Takes a slot of `pool` when fewer than `cap` are taken; returns its token, or null when full. */
  acquire(pool: string, cap: number, ttlMs: number): Promise<string | null>;
  /** Gives a slot back (idempotent). */
  release(pool: string, token: string): Promise<void>;
  /** Extends a slot's time to live (long calls). */
  refresh(pool: string, token: string, ttlMs: number): Promise<void>;
  /** Slots taken in `pool` now (expired ones not counted). */
  inUse(pool: string): Promise<number>;
  close(): Promise<void>;
}

const WINDOW_S = 60;
/** The limiter never refuses by itself: limits differ per account and are compared here. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

function toHit(res: RateLimiterRes, limit: number): WindowHit {
  return { allowed: res.consumedPoints <= limit, count: res.consumedPoints, resetMs: res.msBeforeNext };
}

/** In-process store: the embedded default (one process). */
export class MemoryLimitStore implements LimitStore {
  readonly #windows = new RateLimiterMemory({ points: UNBOUNDED, duration: WINDOW_S });
  readonly #long = new Map<number, RateLimiterMemory>();

  #limiter(windowS: number): RateLimiterMemory {
    let l = this.#long.get(windowS);
    if (!l) {
      l = new RateLimiterMemory({ points: UNBOUNDED, duration: windowS, keyPrefix: `w${windowS}` });
      this.#long.set(windowS, l);
    }
    return l;
  }

  async hitWindow(key: string, limit: number, windowS: number, cost = 1): Promise<WindowHit> {
    return toHit(await this.#limiter(windowS).consume(key, cost), limit);
  }

  async peekWindow(key: string, windowS: number): Promise<{ count: number; resetMs: number }> {
    const res = await this.#limiter(windowS).get(key);
    return res ? { count: res.consumedPoints, resetMs: res.msBeforeNext } : { count: 0, resetMs: windowS * 1000 };
  }

  async resetWindow(key: string, windowS: number): Promise<void> {
    await this.#limiter(windowS).delete(key);
  }
  readonly #pools = new Map<string, Map<string, number>>();

  async hit(key: string, limit: number, cost = 1): Promise<WindowHit> {
    return toHit(await this.#windows.consume(key, cost), limit);
  }

  async hitAll(windows: readonly WindowCount[]): Promise<WindowHit[]> {
    const out: WindowHit[] = [];
    for (const w of windows) {
      const hit = toHit(await this.#windows.consume(w.key, w.cost ?? 1), w.limit);
      out.push(hit);
      if (!hit.allowed) break;
    }
    return out;
  }

  async peek(key: string): Promise<{ count: number; resetMs: number }> {
    const res = await this.#windows.get(key);
    return res ? { count: res.consumedPoints, resetMs: res.msBeforeNext } : { count: 0, resetMs: WINDOW_S * 1000 };
  }

  #live(pool: string): Map<string, number> {
    let slots = this.#pools.get(pool);
    if (!slots) {
      slots = new Map();
      this.#pools.set(pool, slots);
    }
    const now = Date.now();
    for (const [t, exp] of slots) if (exp <= now) slots.delete(t);
    return slots;
  }

  async acquire(pool: string, cap: number, ttlMs: number): Promise<string | null> {
    const slots = this.#live(pool);
    if (slots.size >= cap) return null;
    const token = randomUUID();
    slots.set(token, Date.now() + ttlMs);
    return token;
  }

  async release(pool: string, token: string): Promise<void> {
    const slots = this.#pools.get(pool);
    slots?.delete(token);
    if (slots && slots.size === 0) this.#pools.delete(pool);
  }

  async refresh(pool: string, token: string, ttlMs: number): Promise<void> {
    const slots = this.#pools.get(pool);
    if (slots?.has(token)) slots.set(token, Date.now() + ttlMs);
  }

  async inUse(pool: string): Promise<number> {
    return this.#live(pool).size;
  }

  async close(): Promise<void> {
    this.#pools.clear();
  }
}

/**
 * Takes a slot. KEYS[1] = pool set; ARGV = now ms, cap, expiry ms, token.
 * 1. drop slots whose expiry has passed (their process died or forgot them);
 * 2. if the remaining slots reach the cap, refuse (0);
 * 3. else add the token scored by its expiry, keep the key alive a little longer than the slot, accept (1).
 */
const ACQUIRE_LUA = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[3]) + 60000)
return 1
`;

/**
 * Extends a slot. KEYS[1] = pool set; ARGV = new expiry ms, token.
 * Only a slot that still exists is extended (XX): an expired slot is not resurrected.
 */
const REFRESH_LUA = `
if redis.call('ZADD', KEYS[1], 'XX', 'CH', ARGV[1], ARGV[2]) == 1 then
  redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[1]) + 60000)
end
return 1
`;

/** Counts live slots. KEYS[1] = pool set; ARGV[1] = now ms. Drops expired slots first. */
const IN_USE_LUA = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
return redis.call('ZCARD', KEYS[1])
`;

/**
 * Counts several windows in order, stopping after the first that refuses (`LimitStore.hitAll`).
 * KEYS = the windows' keys; ARGV[1] = the window in seconds; ARGV[2i], ARGV[2i+1] = cost and limit of KEYS[i].
 * Each window is counted exactly as rate-limiter-flexible's `RateLimiterRedis` counts it (its
 * `incrTtlLuaScript`: the same key, an integer counter created at 0 with the window as its expiry, then
 * INCRBY; a counter found without expiry gets one), so `hit` and `peek` share the counters. Returns
 * {count, pttl} of each window counted, flat; stops after the first whose count passes its limit.
 * Keys of one script must live on one node (a single Redis, not Redis Cluster, as `openLimitStore` connects).
 */
const HIT_ALL_LUA = `
local out = {}
for i, key in ipairs(KEYS) do
  redis.call('set', key, 0, 'EX', ARGV[1], 'NX')
  local consumed = redis.call('incrby', key, ARGV[2 * i])
  local ttl = redis.call('pttl', key)
  if ttl == -1 then
    redis.call('expire', key, ARGV[1])
    ttl = 1000 * ARGV[1]
  end
  out[#out + 1] = consumed
  out[#out + 1] = ttl
  if consumed > tonumber(ARGV[2 * i + 1]) then
    break
  end
end
return out
`;

/** The scripts defined on the connection (`defineCommand`): KEYS then ARGV, as in the Lua above. */
interface SlotScripts {
  gwAcquireSlot(key: string, now: number, cap: number, expiresAt: number, token: string): Promise<number>;
  /** {@link HIT_ALL_LUA}: the number of keys first (it varies), then the keys, then ARGV. */
  gwHitAll(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
}

/** Shared store in Redis (`REDIS_URL`): every process of a cluster sees the same counts and pools. */
export class RedisLimitStore implements LimitStore {
  readonly #redis: Redis;
  readonly #scripts: SlotScripts;
  readonly #prefix: string;
  readonly #windows: RateLimiterRedis;

  readonly #long = new Map<number, RateLimiterRedis>();

  #limiter(windowS: number): RateLimiterRedis {
    let l = this.#long.get(windowS);
    if (!l) {
      l = new RateLimiterRedis({ storeClient: this.#redis, keyPrefix: `${this.#prefix}:win${windowS}`, points: UNBOUNDED, duration: windowS });
      this.#long.set(windowS, l);
    }
    return l;
  }

  async hitWindow(key: string, limit: number, windowS: number, cost = 1): Promise<WindowHit> {
    try {
      return toHit(await this.#limiter(windowS).consume(key, cost), limit);
    } catch (err) {
      throw err instanceof Error ? err : new Error(`redis window failed: ${JSON.stringify(err)}`);
    }
  }

  async peekWindow(key: string, windowS: number): Promise<{ count: number; resetMs: number }> {
    const res = await this.#limiter(windowS).get(key);
    return res ? { count: res.consumedPoints, resetMs: res.msBeforeNext } : { count: 0, resetMs: windowS * 1000 };
  }

  async resetWindow(key: string, windowS: number): Promise<void> {
    await this.#limiter(windowS).delete(key);
  }

  /** `prefix` namespaces every key (tests use a random one; CI shares the Redis server). */
  constructor(redis: Redis, prefix = "gw") {
    this.#redis = redis;
    // Sent as EVALSHA (ioredis loads the script on the first NOSCRIPT): the script's text is not sent,
    // nor hashed by Redis, at every call of the hot path.
    if (!("gwAcquireSlot" in redis)) redis.defineCommand("gwAcquireSlot", { numberOfKeys: 1, lua: ACQUIRE_LUA });
    if (!("gwHitAll" in redis)) redis.defineCommand("gwHitAll", { lua: HIT_ALL_LUA });
    this.#scripts = redis as unknown as SlotScripts;
    this.#prefix = prefix;
    this.#windows = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${prefix}:win`,
      points: UNBOUNDED,
      duration: WINDOW_S,
      // Redis errors surface to the caller, which applies the fail-open/closed setting.
      insuranceLimiter: undefined,
    });
  }

  async hit(key: string, limit: number, cost = 1): Promise<WindowHit> {
    try {
      return toHit(await this.#windows.consume(key, cost), limit);
    } catch (err) {
      throw err instanceof Error ? err : new Error(`redis window failed: ${JSON.stringify(err)}`);
    }
  }

  async hitAll(windows: readonly WindowCount[]): Promise<WindowHit[]> {
    if (windows.length === 0) return [];
    const keys: string[] = [];
    const args: (string | number)[] = [WINDOW_S];
    for (const w of windows) {
      const cost = w.cost ?? 1;
      // As RateLimiterRedis refuses them: INCRBY takes integers only.
      if (!Number.isInteger(cost)) throw new Error(`window cost must be an integer, got ${cost}`);
      keys.push(this.#windows.getKey(w.key));
      args.push(cost, w.limit);
    }
    const flat = await this.#scripts.gwHitAll(keys.length, ...keys, ...args);
    const out: WindowHit[] = [];
    for (let i = 0; i < flat.length / 2; i++) {
      const count = Number(flat[2 * i]);
      out.push({ allowed: count <= windows[i].limit, count, resetMs: Number(flat[2 * i + 1]) });
    }
    return out;
  }

  async peek(key: string): Promise<{ count: number; resetMs: number }> {
    const res = await this.#windows.get(key);
    return res ? { count: res.consumedPoints, resetMs: res.msBeforeNext } : { count: 0, resetMs: WINDOW_S * 1000 };
  }

  #key(pool: string): string {
    return `${this.#prefix}:pool:${pool}`;
  }

  async acquire(pool: string, cap: number, ttlMs: number): Promise<string | null> {
    const token = randomUUID();
    const now = Date.now();
    const ok = await this.#scripts.gwAcquireSlot(this.#key(pool), now, cap, now + ttlMs, token);
    return ok === 1 ? token : null;
  }

  async release(pool: string, token: string): Promise<void> {
    await this.#redis.zrem(this.#key(pool), token);
  }

  async refresh(pool: string, token: string, ttlMs: number): Promise<void> {
    await this.#redis.eval(REFRESH_LUA, 1, this.#key(pool), Date.now() + ttlMs, token);
  }

  async inUse(pool: string): Promise<number> {
    return Number(await this.#redis.eval(IN_USE_LUA, 1, this.#key(pool), Date.now()));
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}

/**
 * The limit store of a gateway: in Redis with `redisUrl` (`REDIS_URL`; keys under `prefix`), else in this
 * process. ioredis is loaded only with a URL: a single-process gateway never pays its memory. The Redis
 * connection fails fast when Redis is down, so the limiter applies `LIMITS_ON_STORE_ERROR` instead of
 * queueing commands.
 */
export async function openLimitStore(redisUrl: string | null, prefix: string): Promise<LimitStore> {
  if (!redisUrl) return new MemoryLimitStore();
  const { Redis: RedisClient } = await import("ioredis");
  const redis = new RedisClient(redisUrl, {
    // Fail fast when Redis is down: the limiter applies LIMITS_ON_STORE_ERROR instead of queueing.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    lazyConnect: false,
    // Commands of concurrent requests issued in the same event-loop turn go out in one write.
    enableAutoPipelining: true,
  }).on("error", () => {});
  return new RedisLimitStore(redis, prefix);
}
