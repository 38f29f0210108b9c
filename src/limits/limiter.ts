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
import type { EffectiveLimits } from "./effective.ts";
import type { LimitStore, WindowHit } from "./store.ts";

/** What to do when the store cannot be reached. */
export type StoreFailureMode = "open" | "closed";

/** The D13 headers of a window. */
export interface RateHeaders {
  "X-RateLimit-Limit": string;
  "X-RateLimit-Remaining": string;
  "X-RateLimit-Reset": string;
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
   * Counts one request of `accountId` in its per-minute window (D15: every authenticated request).
   * Returns the D13 headers; throws AppError 429 `rate_limited` (with the headers and `Retry-After`).
   */
  async request(accountId: string, limits: EffectiveLimits): Promise<RateHeaders> {
    const hit = await this.#guarded<WindowHit>(() => this.store.hit(`rpm:${accountId}`, limits.rpm), {
      allowed: true,
      count: 0,
      resetMs: 60_000,
    });
    const headers = headersOf(limits.rpm, hit);
    if (!hit.allowed) {
      const retry = Math.max(1, Math.ceil(hit.resetMs / 1000));
      throw new AppError(
        429,
        "rate_limited",
        `Rate limit of ${limits.rpm} requests per minute reached (${limits.name}); retry in ${retry} s.`,
        null,
        { ...headers, "Retry-After": String(retry) },
      );
    }
    return headers;
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
   * Counts one request made with API key `keyId` in the key's own per-minute window of `rpm` (D34: every
   * authenticated request made with it).
   * @throws AppError 429 `rate_limited` with `Retry-After` when the key used its `rpm`.
   */
  async keyRequest(keyId: string, rpm: number): Promise<void> {
    const hit = await this.#guarded<WindowHit>(() => this.store.hit(`krpm:${keyId}`, rpm), { allowed: true, count: 0, resetMs: 60_000 });
    if (!hit.allowed) {
      throw errors.rateLimited(`Rate limit of ${rpm} requests per minute for this API key reached.`, hit.resetMs / 1000);
    }
  }

  /** Counts one call of `model` against the per-model window. @throws AppError 429 `rate_limited`. */
  async model(accountId: string, limits: EffectiveLimits, model: string): Promise<void> {
    const hit = await this.#guarded<WindowHit>(() => this.store.hit(`mrpm:${accountId}:${model}`, limits.perModelRpm), {
      allowed: true,
      count: 0,
      resetMs: 60_000,
    });
    if (!hit.allowed) {
      throw errors.rateLimited(
        `Rate limit of ${limits.perModelRpm} requests per minute for ${model} reached (${limits.name}).`,
        hit.resetMs / 1000,
      );
    }
  }

  /**
   * Counts `tokens` against the per-minute token window and the single-request cap (text models).
   * @throws AppError 429 `rate_limited`.
   */
  async tokens(accountId: string, limits: EffectiveLimits, tokens: number): Promise<void> {
    if (tokens > limits.maxSingleRequest) {
      throw errors.rateLimited(
        `This request needs about ${tokens} tokens; ${limits.name} allows ${limits.maxSingleRequest} in one request.`,
        60,
      );
    }
    const hit = await this.#guarded<WindowHit>(() => this.store.hit(`tpm:${accountId}`, limits.tpm, tokens), {
      allowed: true,
      count: 0,
      resetMs: 60_000,
    });
    if (!hit.allowed) throw errors.rateLimited(`Token limit of ${limits.tpm} per minute reached (${limits.name}).`, hit.resetMs / 1000);
  }

  /**
   * Takes a slot of the account's audio `pool` (D12) and returns the function that gives it back (call it
   * exactly once, however the call ends). The slot is refreshed while held, and expires by itself if
   * this process dies.
   * @throws AppError 429 `rate_limited` at once when the pool is full.
   */
  async acquireSlot(accountId: string, limits: EffectiveLimits, pool: AudioPool): Promise<() => Promise<void>> {
    const cap = limits.audioConcurrentPerProvider[pool];
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
 * The limits of one caller, as services see them: a per-model window check and audio pool slots.
 * Routes bind it to the authenticated principal; services call it after validation, before the hold.
 */
export interface CallGuard {
  /**
   * Checks that the key may call `modelId` (D34 allow-list), then counts the call in the per-model window.
   * @throws AppError 403 `model_not_allowed`, 429 `rate_limited`.
   */
  model(modelId: string): Promise<void>;
  /** Takes a slot of `pool`; the returned function gives it back (call it exactly once). @throws 429. */
  slot(pool: AudioPool): Promise<() => Promise<void>>;
  /**
   * {@link model} and {@link slot} of an audio call, the window check and the slot taken concurrently (one
   * round trip to the limit store instead of two). A call the window refuses gives its slot back at once.
   * @throws AppError 403 `model_not_allowed`, 429 `rate_limited` (the window's before the pool's).
   */
  admit(modelId: string, pool: AudioPool): Promise<() => Promise<void>>;
}

/**
 * The per-minute request windows of one request (the key's rpm, then the account's) when their counting
 * waits for the model allow-list (D34: checks run in the order expiry, model allow-list, key rpm, account
 * limits, ...). The guard calls exactly one of them, once, when it checks the allow-list.
 */
export interface DeferredWindows {
  /** The model is allowed: counts the request in its windows now (a second call does nothing). @throws AppError 429 `rate_limited`. */
  count(): Promise<void>;
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
 * `windows`, the request's own per-minute windows are counted by the guard right after the allow-list
 * check (skipped when it refuses), before the per-model window (D34 order of checks).
 */
export function guardFor(
  limiter: Limiter,
  accountId: string,
  limits: EffectiveLimits,
  models: readonly string[] | null = null,
  windows: DeferredWindows | null = null,
): CallGuard {
  /** The allow-list, then the request's deferred windows. @throws AppError 403 `model_not_allowed`, 429. */
  const allowed = async (modelId: string): Promise<void> => {
    if (!modelAllowed(models, modelId)) {
      windows?.skip();
      throw errors.modelNotAllowed(modelId);
    }
    await windows?.count();
  };
  return {
    model: async (modelId) => {
      await allowed(modelId);
      await limiter.model(accountId, limits, modelId);
    },
    slot: (pool) => limiter.acquireSlot(accountId, limits, pool),
    admit: async (modelId, pool) => {
      await allowed(modelId);
      const [window, slot] = await Promise.allSettled([limiter.model(accountId, limits, modelId), limiter.acquireSlot(accountId, limits, pool)]);
      if (window.status === "rejected") {
        if (slot.status === "fulfilled") await slot.value();
        throw window.reason;
      }
      if (slot.status === "rejected") throw slot.reason;
      return slot.value;
    },
  };
}
