/**
 * Authentication (spec "Authentication", D2, D8, D32, D34): a bearer secret (an API key `gw_...` or a
 * session token `sess_...`) resolved to the principal it acts as, with the cache of resolved API keys.
 *
 * The cache is state of one gateway: {@link AuthCache} is created once per `Services` (services.ts) and
 * every module that changes what a cached principal holds (key management, deposits, tier and limit
 * overrides, top-ups) is handed it to drop the account's entries. Two gateways in one process share nothing.
 */
import type { Executor } from "../billing/ledger.ts";
import type { EffectiveLimits } from "../limits/effective.ts";
import { errors } from "../errors.ts";
import type { KeyMode, Role } from "../storage/schema.ts";
import { sessionByHash } from "./accounts.repository.ts";
import { firstOrgOf, membershipWithLimits } from "./orgs.repository.ts";
import { controlsOf, type KeyControls } from "./key-controls.ts";
import { keyByHash, touchKeyLastUsed } from "./keys.repository.ts";
import { LimitsMemo } from "./limits.ts";
import { digestsEqual, hashSecret } from "./secrets.ts";

/** What a caller authenticated as. */
export interface Principal {
  /** The organization the caller acts for (D41: `org_<random>`; the key's, or the session's chosen one). */
  accountId: string;
  /** The member behind the call (D41): the key's creator or the session's user; null for a key without one. */
  userId: string | null;
  /** What the caller may do in the organization (D41): the session user's role, or the key's. */
  role: Role;
  /** The API key used, or null for a session token. */
  keyId: string | null;
  /** The account's limits at the time of the request (tier row with overrides). */
  limits: EffectiveLimits;
  /** The key's mode (D32): `test` keys are served by the simulator and move no money. Sessions are `live`. */
  mode: KeyMode;
  /** The key's own controls (D34), or null for a session token. */
  key: KeyControls | null;
  /** The organization has budgets (D44): its live calls' holds count against them. */
  budgets: boolean;
  /** A session's user's email (the audit log's actor, D45); absent for an API key. */
  email?: string | null;
}

/** The part of {@link AuthCache} that the modules changing an account's keys, tier or limits use. */
export interface AccountAuthChanges {
  /** Drops the cached keys of `accountId` (after its keys, deposits, tier or limits changed). */
  forgetAccount(accountId: string): void;
}

/** Most resolved keys kept; past it the cache starts over. */
const AUTH_CACHE_MAX_ENTRIES = 100_000;
/** Last-used timestamps are written at most once a minute per key, off the request's critical path. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;
/** Most keys whose last write time is remembered; past it the record starts over. */
const LAST_USED_MAX_ENTRIES = 100_000;

/**
 * API keys resolved in the last `ttlMs` ms, by secret hash (issue "Fast on the scale path": one uncached
 * key lookup per request was most of the gateway's PostgreSQL round trips once the ledger was batched).
 * An entry holds the principal as it was read: the account, the key's id and mode, and the effective
 * limits. What changes them in this process drops the account's entries at once
 * ({@link AuthCache.forgetAccount}: key deletion, deposits, tier and limit overrides); another process sees
 * the change after at most the TTL. Money is never read from here: holds check the balance in the database.
 *
 * Also this gateway's memo of effective limits ({@link LimitsMemo}) and the times it last wrote each key's
 * `last_used_at`.
 */
export class AuthCache implements AccountAuthChanges {
  readonly #entries = new Map<string, { principal: Principal; expiresAt: number }>();
  /** How long (ms, 0 disables) a resolved API key is reused without reading the database again. */
  readonly #ttlMs: number;
  readonly #limits = new LimitsMemo();
  /** When this gateway last wrote each key's `last_used_at`, epoch ms, by key id. */
  readonly #lastUsedWritten = new Map<string, number>();

  /**
   * @param options.ttlMs how long (ms, 0 disables) a resolved API key is reused without reading the
   *   database again (`AUTH_CACHE_MS`, default 2000): the longest a key deleted, or a limit changed, by
   *   another process keeps its old effect here. Negative values count as 0.
   */
  constructor(options: { ttlMs: number }) {
    this.#ttlMs = Math.max(0, options.ttlMs);
  }

  /** Drops the cached keys of `accountId` (after its keys, deposits, tier or limits changed). */
  forgetAccount(accountId: string): void {
    for (const [hash, entry] of this.#entries) if (entry.principal.accountId === accountId) this.#entries.delete(hash);
  }

  /**
   * Resolves a bearer secret (API key `gw_...` or session token `sess_...`) to its organization and role
   * (D41). `allowSession` false accepts API keys only. A session acts for `org` (the `X-Svc-Org` header)
   * when given, else for its user's personal organization (else the first one the user joined); a key for
   * its own organization, and `org`, when given, must name it. Returns null when the secret is unknown,
   * deleted or expired.
   * @throws AppError 404 `org_not_found` when `org` names an organization the caller does not belong to.
   */
  async authenticate(db: Executor, secret: string, opts: { allowSession: boolean; org?: string | null }): Promise<Principal | null> {
    if (secret.length < 10 || secret.length > 200) return null;
    const hash = hashSecret(secret);
    const org = opts.org ?? null;
    if (secret.startsWith("sess_")) {
      if (!opts.allowSession) return null;
      const s = await sessionByHash(db, hash);
      if (!s || !digestsEqual(s.tokenHash, hash) || s.expiresAt < Date.now()) return null;
      if (org !== null && org.length > 200) throw errors.orgNotFound();
      let orgId = org ?? s.personalOrgId;
      let m = orgId !== null ? await membershipWithLimits(db, s.userId, orgId) : null;
      if (m === null && org === null) {
        // No personal organization to fall back to (the user left it): the first one the user joined.
        orgId = await firstOrgOf(db, s.userId);
        m = orgId !== null ? await membershipWithLimits(db, s.userId, orgId) : null;
      }
      if (m === null || orgId === null) throw errors.orgNotFound();
      return { accountId: orgId, userId: s.userId, role: m.role, keyId: null, limits: this.#limits.of(m), mode: "live", key: null, budgets: Number(m.has_budgets) === 1, email: s.email };
    }
    const now = Date.now();
    const cached = this.#entries.get(hash);
    if (cached && cached.expiresAt > now) return checkedOrg(cached.principal, org);
    const k = await keyByHash(db, hash);
    if (!k || !digestsEqual(k.keyHash, hash)) {
      this.#entries.delete(hash);
      return null;
    }
    if (now - (this.#lastUsedWritten.get(k.id) ?? 0) > LAST_USED_WRITE_INTERVAL_MS) {
      if (this.#lastUsedWritten.size > LAST_USED_MAX_ENTRIES) this.#lastUsedWritten.clear();
      this.#lastUsedWritten.set(k.id, now);
      // Best effort: a failed timestamp write must never fail the request.
      touchKeyLastUsed(db, k.id, now).catch(() => {});
    }
    const principal: Principal = {
      accountId: k.accountId,
      userId: k.createdBy,
      role: k.role,
      keyId: k.id,
      limits: this.#limits.of(k),
      mode: k.mode === "test" ? "test" : "live",
      key: controlsOf(k),
      budgets: k.hasBudgets,
    };
    if (this.#ttlMs > 0) {
      if (this.#entries.size >= AUTH_CACHE_MAX_ENTRIES) this.#entries.clear();
      this.#entries.set(hash, { principal, expiresAt: now + this.#ttlMs });
    }
    return checkedOrg(principal, org);
  }
}

/** A key acts for its own organization only: an `X-Svc-Org` naming another one is 404 `org_not_found` (D41). */
function checkedOrg(principal: Principal, org: string | null): Principal {
  if (org !== null && org !== principal.accountId) throw errors.orgNotFound();
  return principal;
}
