/**
 * Tier limits applied to callers (spec "Tier matrix fields", "Rate limiting"; D12, D13, D15, D22):
 * the per-user request window (all keys of an account together), per-model windows, token windows for
 * text models, and the five audio concurrency pools. Backed by a {@link LimitStore} (memory or Redis).
 *
 * If the store fails (Redis unreachable) the limiter either lets the call through (`open`, the default:
 * the gateway keeps serving, without limits) or refuses it with 503 (`closed`), by `LIMITS_ON_STORE_ERROR`;
 * either way it logs, at most once every 10 s.
 */
import { createHash } from "node:crypto";
import { resolveTextModelId } from "../catalog/text-models.ts";
import type { AudioPool } from "../catalog/types.ts";
import type { AuthLimits } from "../config.ts";
import { AppError, errors } from "../errors.ts";
import { poolSlots } from "../metrics.ts";
import { type EffectiveLimits, wayUp } from "./effective.ts";
import type { LimitStore, WindowCount, WindowHit } from "./store.ts";

/** What to do when the store cannot be reached. */
export type StoreFailureMode = "open" | "closed";

/** The D13 headers of a window. */
export interface RateHeaders {
  "X-RateLimit-Limit": string;
  "X-RateLimit-Remaining": string;
  "X-RateLimit-Reset": string;
}

/**
 * The windows one {@link Limiter.count} counts, in this order (D34): the request's own, the per-model
 * window, the tokens. Each part is optional.
 */
export interface CallWindows {
  /**
   * The request's per-minute windows: the key's own (`key`, when the key has an `rpm`, D34), then the
   * account's (D13, D15), whose headers go to `headers`. Omitted when they were counted already.
   */
  request?: { key: { id: string; rpm: number } | null; headers(h: RateHeaders): void };
  /** The model of the call: its per-model window. */
  model?: string;
  /** The tokens of a text call (input + `max_tokens`): `max_single_request`, then the token window. */
  tokens?: number;
}

/** Minimal logger. */
export interface LimiterLog {
  warn(obj: object, msg?: string): void;
}

/** A pool slot lives this long unless refreshed (a dead process's slot frees itself), ms. */
export const POOL_SLOT_TTL_MS = 60_000;

function headersOf(limit: number, hit: { count: number; resetMs: number }): RateHeaders {
  return {
    "X-RateLimit-Limit": String(limit),
    "X-RateLimit-Remaining": String(Math.max(0, limit - hit.count)),
    "X-RateLimit-Reset": String(Math.max(0, Math.ceil(hit.resetMs / 1000))),
  };
}

/** A store key for an email that does not put the address itself in Redis. */
function emailKey(email: string): string {
  return createHash("sha256").update(email.trim().toLowerCase()).digest("base64url").slice(0, 22);
}

/** Applies limits to calls; one per process, shared by every request. */
export class Limiter {
  readonly store: LimitStore;
  readonly #mode: StoreFailureMode;
  readonly #log: LimiterLog;
  #lastFailureLog = 0;

  constructor(store: LimitStore, mode: StoreFailureMode, log: LimiterLog) {
    this.store = store;
    this.#mode = mode;
    this.#log = log;
  }

  /**
   * Runs a store operation; on failure applies the failure mode (`fallback` when open). `alwaysOpen`:
   * the login and registration limits fall back even in `closed` mode, so a Redis outage never locks
   * everyone out of their account (they slow guessing; they do not meter paid work).
   */
  async #guarded<T>(op: () => Promise<T>, fallback: T, alwaysOpen = false): Promise<T> {
    try {
      return await op();
    } catch (err) {
      const now = Date.now();
      if (now - this.#lastFailureLog > 10_000) {
        this.#lastFailureLog = now;
        this.#log.warn({ err, mode: this.#mode }, "limit store unreachable");
      }
      if (this.#mode === "closed" && !alwaysOpen) {
        throw new AppError(503, "limits_unavailable", "Rate limits cannot be checked right now; retry shortly.", null, {
          "Retry-After": "1",
        });
      }
      return fallback;
    }
  }

  /**
   * Before a login is checked: refuses when the email or the client address already used up its failed
   * attempts in the window (so a locked-out guess is not even verified). The email's lock affects only
   * that email; the address's lock only that address.
   * @throws AppError 429 `rate_limited` with `Retry-After` (seconds until the window resets).
   */
  async loginAllowed(email: string, address: string, cfg: AuthLimits): Promise<void> {
    const [byEmail, byAddress] = await this.#guarded(
      () => Promise.all([this.store.peekWindow(`login:e:${emailKey(email)}`, cfg.loginWindowS), this.store.peekWindow(`login:a:${address}`, cfg.loginWindowS)]),
      [{ count: 0, resetMs: 0 }, { count: 0, resetMs: 0 }],
      true,
    );
    if (byEmail.count >= cfg.loginFailuresPerEmail) throw errors.rateLimited("Too many failed logins for this email; try again later.", byEmail.resetMs / 1000);
    if (byAddress.count >= cfg.loginFailuresPerAddress) throw errors.rateLimited("Too many failed logins from this address; try again later.", byAddress.resetMs / 1000);
  }

  /** Counts one failed login against the email and the client address. */
  async loginFailed(email: string, address: string, cfg: AuthLimits): Promise<void> {
    await this.#guarded(
      () =>
        Promise.all([
          this.store.hitWindow(`login:e:${emailKey(email)}`, cfg.loginFailuresPerEmail, cfg.loginWindowS),
          this.store.hitWindow(`login:a:${address}`, cfg.loginFailuresPerAddress, cfg.loginWindowS),
        ]),
      null,
      true,
    );
  }

  /** A successful login clears the email's failures (the address keeps its count). */
  async loginSucceeded(email: string, cfg: AuthLimits): Promise<void> {
    await this.#guarded(() => this.store.resetWindow(`login:e:${emailKey(email)}`, cfg.loginWindowS), undefined, true);
  }

  /**
   * Counts one registration attempt from `address`.
   * @throws AppError 429 `rate_limited` with `Retry-After` when over `registrationsPerAddress` in the window.
   */
  async registration(address: string, cfg: AuthLimits): Promise<void> {
    const hit = await this.#guarded<WindowHit>(
      () => this.store.hitWindow(`register:a:${address}`, cfg.registrationsPerAddress, cfg.registrationWindowS),
      { allowed: true, count: 0, resetMs: 0 },
      true,
    );
    if (!hit.allowed) throw errors.rateLimited("Too many registrations from this address; try again later.", hit.resetMs / 1000);
  }

  /**
   * Counts the windows of one request or model call in ONE round trip to the store (issue 33), in the
   * order of the checks (D34): the key's own rpm, the account's rpm (D13, D15), the per-model window, then
   * the tokens of a text call (`max_single_request`, checked in this process, then the token window). As
   * when each was counted on its own: a window counts even when it refuses (a client hammering stays
   * refused), the windows after the first refusal are not counted, and a call over `max_single_request`
   * counts the windows before it but not the token window. The account window's D13 headers go to
   * `w.request.headers` as soon as it is counted (refused or not); the store's failure applies the
   * failure mode to all of them at once (`open`: nothing refused, headers of an empty window).
   * @throws AppError 429 `rate_limited` of the first window that refuses, with `Retry-After` (the
   *   account window's also with its D13 headers); over `max_single_request` a 429 with
   *   `x-should-retry: false` and no `Retry-After` (D48); 503 `limits_unavailable` in `closed` mode.
   */
  async count(accountId: string, limits: EffectiveLimits, w: CallWindows): Promise<void> {
    const plan: (WindowCount & { check: "key" | "account" | "model" | "tokens" })[] = [];
    const key = w.request?.key ?? null;
    if (key !== null) plan.push({ check: "key", key: `krpm:${key.id}`, limit: key.rpm });
    if (w.request !== undefined) plan.push({ check: "account", key: `rpm:${accountId}`, limit: limits.rpm });
    if (w.model !== undefined) plan.push({ check: "model", key: `mrpm:${accountId}:${w.model}`, limit: limits.perModelRpm });
    const overSingle = w.tokens !== undefined && w.tokens > limits.maxSingleRequest;
    if (w.tokens !== undefined && !overSingle) plan.push({ check: "tokens", key: `tpm:${accountId}`, limit: limits.tpm, cost: w.tokens });
    const hits =
      plan.length === 0
        ? []
        : await this.#guarded<WindowHit[]>(
            () => this.store.hitAll(plan),
            plan.map(() => ({ allowed: true, count: 0, resetMs: 60_000 })),
          );
    for (const [i, hit] of hits.entries()) {
      const { check, limit } = plan[i];
      if (check === "account") {
        const headers = headersOf(limit, hit);
        w.request?.headers(headers);
        if (!hit.allowed) {
          const retry = Math.max(1, Math.ceil(hit.resetMs / 1000));
          throw new AppError(429, "rate_limited", `Rate limit of ${limit} requests per minute reached (${limits.name}); retry in ${retry} s.`, null, {
            ...headers,
            "Retry-After": String(retry),
          });
        }
      }
      if (hit.allowed) continue;
      if (check === "key") throw errors.rateLimited(`Rate limit of ${limit} requests per minute for this API key reached.`, hit.resetMs / 1000);
      if (check === "model") {
        throw errors.rateLimited(`Rate limit of ${limit} requests per minute for ${w.model} reached (${limits.name}).`, hit.resetMs / 1000);
      }
      throw errors.rateLimited(`Token limit of ${limit} per minute reached (${limits.name}).`, hit.resetMs / 1000);
    }
    if (overSingle) {
      // No wait lifts it (D48): the same request stays over the tier's `max_single_request`.
      const tokens = w.tokens ?? 0;
      throw errors.neverAllowed(
        `This request needs about ${tokens} tokens; ${limits.name} allows ${limits.maxSingleRequest} in one request. Send a shorter request, or: ${wayUp(limits, (t) => t.maxSingleRequest >= tokens)}`,
      );
    }
  }

  /**
   * Counts one request in its per-minute windows (D15: every authenticated request; D34: the key's own
   * `rpm` window first when `key` has one), in one round trip, and returns the account window's D13
   * headers. See {@link count}.
   * @throws AppError 429 `rate_limited` over either (the account's with its headers).
   */
  async request(accountId: string, limits: EffectiveLimits, key: { id: string; rpm: number } | null): Promise<RateHeaders> {
    const got: { headers?: RateHeaders } = {};
    await this.count(accountId, limits, { request: { key, headers: (h) => (got.headers = h) } });
    return got.headers ?? headersOf(limits.rpm, { count: 0, resetMs: 60_000 });
  }

  /**
   * The D13 headers of `accountId`'s per-minute window without counting in it: the answer to a request
   * that takes no place in the window (a model the key's allow-list refuses, D34).
   */
  async requestHeaders(accountId: string, limits: EffectiveLimits): Promise<RateHeaders> {
    const now = await this.#guarded(() => this.store.peek(`rpm:${accountId}`), { count: 0, resetMs: 60_000 });
    return headersOf(limits.rpm, now);
  }

  /**
   * Takes a slot of the account's audio `pool` (D12) and returns the function that gives it back (call it
   * exactly once, however the call ends). The slot is refreshed while held, and expires by itself if
   * this process dies.
   * @throws AppError 429 `rate_limited` at once when the pool is full.
   */
  async acquireSlot(accountId: string, limits: EffectiveLimits, pool: AudioPool): Promise<() => Promise<void>> {
    const cap = limits.audioConcurrentPerProvider[pool];
    // A pool of size 0 (an operator's override, D22): no wait lifts it (D48).
    if (cap <= 0) throw errors.neverAllowed(`The ${pool} audio pool has no slots on ${limits.name}. ${wayUp(limits, (t) => t.audioConcurrentPerProvider[pool] > 0)}`);
    const key = `audio:${accountId}:${pool}`;
    const token = await this.#guarded<string | null>(() => this.store.acquire(key, cap, POOL_SLOT_TTL_MS), "unlimited");
    if (token === null) {
      throw errors.rateLimited(`All ${cap} concurrent slots of the ${pool} audio pool are in use (${limits.name}).`, 1);
    }
    if (token === "unlimited") return async () => {};
    poolSlots.inc({ pool });
    const keepAlive = setInterval(() => {
      this.store.refresh(key, token, POOL_SLOT_TTL_MS).catch(() => {});
    }, POOL_SLOT_TTL_MS / 3);
    keepAlive.unref();
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      poolSlots.dec({ pool });
      clearInterval(keepAlive);
      // Sent now, its answer not awaited (one round trip less before the call's answer): the store's
      // commands run in order, so a later acquire of this process sees the slot free; a lost release
      // only lets the slot expire with its TTL.
      void this.store.release(key, token).catch(() => {});
    };
  }

  /** Runs `fn` holding a slot of `pool` (see {@link acquireSlot}). */
  async withPool<T>(accountId: string, limits: EffectiveLimits, pool: AudioPool, fn: () => Promise<T>): Promise<T> {
    const release = await this.acquireSlot(accountId, limits, pool);
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  /** Checks that the store answers (readiness). Throws when it does not. */
  async ping(): Promise<void> {
    await this.store.peek("ping");
  }

  /** Current usage of an account, for `GET /v1/auth/limits`. */
  async usage(accountId: string): Promise<{ rpm: number; tpm: number; audio: Record<AudioPool, number>; resetS: number }> {
    const pools: AudioPool[] = ["host_1", "host_2", "alpha", "beta", "host_3"];
    return this.#guarded(
      async () => {
        const rpm = await this.store.peek(`rpm:${accountId}`);
        const tpm = await this.store.peek(`tpm:${accountId}`);
        const audio = Object.fromEntries(
          await Promise.all(pools.map(async (p) => [p, await this.store.inUse(`audio:${accountId}:${p}`)] as const)),
        ) as Record<AudioPool, number>;
        return { rpm: rpm.count, tpm: tpm.count, audio, resetS: Math.ceil(rpm.resetMs / 1000) };
      },
      { rpm: 0, tpm: 0, audio: { host_1: 0, host_2: 0, alpha: 0, beta: 0, host_3: 0 }, resetS: 60 },
    );
  }
}

/**
 * The limits of one caller, as services see them: the model checks (allow-list and windows) and audio
 * pool slots. Routes bind it to the authenticated principal; services call it after validation, before
 * the hold.
 */
export interface CallGuard {
  /**
   * Checks that the key may call `modelId` (D34 allow-list), then counts the call in one round trip to
   * the limit store: the request's own windows when its auth left them to the guard (see
   * {@link DeferredWindows}), the per-model window, and with `tokens` (a text call: input + `max_tokens`)
   * `max_single_request` and the token window (see {@link Limiter.count}).
   * @throws AppError 403 `model_not_allowed`, 429 `rate_limited`.
   */
  model(modelId: string, opts?: { tokens?: number }): Promise<void>;
  /** Takes a slot of `pool`; the returned function gives it back (call it exactly once). @throws 429. */
  slot(pool: AudioPool): Promise<() => Promise<void>>;
  /**
   * {@link model} and {@link slot} of an audio call, the windows counted and the slot taken concurrently
   * (one round trip to the limit store instead of two). A call a window refuses gives its slot back at once.
   * @throws AppError 403 `model_not_allowed`, 429 `rate_limited` (a window's before the pool's).
   */
  admit(modelId: string, pool: AudioPool): Promise<() => Promise<void>>;
}

/**
 * The per-minute request windows of one request (the key's rpm, then the account's) when the auth hook
 * left their counting to the call guard (every model call: D34 order of checks expiry, model allow-list,
 * key rpm, account limits, ...; issue 33: counted in the same round trip as the per-model and token
 * windows). The guard takes them once, with its first allowed model, or skips them when the allow-list
 * refuses the model.
 */
export interface DeferredWindows {
  /**
   * The model is allowed: the windows to count with the guard's (the key's rpm when it has one; the
   * account window's headers go to `headers`), the first time; undefined after (a second model call of
   * the same request, or windows already settled).
   */
  take(): { key: { id: string; rpm: number } | null; headers(h: RateHeaders): void } | undefined;
  /** The allow-list refused the model: the request takes no place in any window. */
  skip(): void;
}

/** A guard that limits nothing (internal callers, unit tests). */
export const NO_LIMITS: CallGuard = {
  model: async () => {},
  slot: async () => async () => {},
  admit: async () => async () => {},
};

/**
 * Whether `modelId` (a concrete catalog id) matches the allow-list `models` of a key (D34): an entry equal
 * to it (a text alias counts for the model it resolves to) or a `prefix*` it starts with. Null allows all.
 */
export function modelAllowed(models: readonly string[] | null, modelId: string): boolean {
  if (models === null) return true;
  return models.some((m) => (m.endsWith("*") ? modelId.startsWith(m.slice(0, -1)) : m === modelId || resolveTextModelId(m) === modelId));
}

/**
 * The guard of `accountId` with `limits` and the key's model allow-list (`models`, null for all). With
 * `windows`, the request's own per-minute windows are counted by the guard's first allowed model call,
 * in the same round trip as its per-model window (D34 order), and skipped when the allow-list refuses.
 */
export function guardFor(
  limiter: Limiter,
  accountId: string,
  limits: EffectiveLimits,
  models: readonly string[] | null = null,
  windows: DeferredWindows | null = null,
): CallGuard {
  /** The allow-list (D34): a refused model skips the request's windows. @throws AppError 403 `model_not_allowed`. */
  const allow = (modelId: string): void => {
    if (!modelAllowed(models, modelId)) {
      windows?.skip();
      throw errors.modelNotAllowed(modelId);
    }
  };
  /** Every window of an allowed call, in one {@link Limiter.count}. @throws AppError 429. */
  const count = (modelId: string, tokens?: number): Promise<void> =>
    limiter.count(accountId, limits, { request: windows?.take(), model: modelId, tokens });
  return {
    model: async (modelId, opts) => {
      allow(modelId);
      await count(modelId, opts?.tokens);
    },
    slot: (pool) => limiter.acquireSlot(accountId, limits, pool),
    admit: async (modelId, pool) => {
      allow(modelId);
      const [window, slot] = await Promise.allSettled([count(modelId), limiter.acquireSlot(accountId, limits, pool)]);
      if (window.status === "rejected") {
        if (slot.status === "fulfilled") await slot.value();
        throw window.reason;
      }
      if (slot.status === "rejected") throw slot.reason;
      return slot.value;
    },
  };
}
