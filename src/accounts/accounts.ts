/**
 * Accounts, API keys and sessions (spec "Authentication", decisions D2, D8, D9, D21, D24).
 *
 * Repository-style free functions taking the database first. Secrets are returned once, at creation,
 * and stored only as SHA-256 hashes.
 */
import { periodStart, restartKeyCounter } from "../billing/key-spend.ts";
import { credit, type Executor, inTransaction } from "../billing/ledger.ts";
import { type Micros, microsToUsd } from "../billing/money.ts";
import { effectiveTier, tierRow } from "../catalog/tiers.ts";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import { isUniqueViolation } from "../storage/db.ts";
import { applyOverrides, type EffectiveLimits } from "../limits/effective.ts";
import { prepare } from "../storage/prepared.ts";
import type { KeyMode } from "../storage/schema.ts";
import {
  controlsOf,
  controlsView,
  type KeyControls,
  type KeyControlsBody,
  type KeyControlsView,
  type KeyControlUpdate,
  parseKeyControls,
  type SpentKeyRow,
  spentOfKeys,
} from "./key-controls.ts";
import {
  digestsEqual,
  hashPassword,
  hashSecret,
  newApiKeySecret,
  newSessionToken,
  verifyPassword,
} from "./secrets.ts";

/** Signup credit, micro-USD (spec: 0.50 USD). */
export const SIGNUP_CREDIT_MICROS: Micros = 500_000;
/** Session lifetime, ms (30 days). */
const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,189}\.[^\s@]{1,63}$/;

/** What a caller authenticated as. */
export interface Principal {
  accountId: string;
  /** The API key used, or null for a session token. */
  keyId: string | null;
  /** The account's limits at the time of the request (tier row with overrides). */
  limits: EffectiveLimits;
  /** The key's mode (D32): `test` keys are served by the simulator and move no money. Sessions are `live`. */
  mode: KeyMode;
  /** The key's own controls (D34), or null for a session token. */
  key: KeyControls | null;
}

function validateCredentials(email: unknown, password: unknown): { email: string; password: string } {
  if (typeof email !== "string" || !EMAIL_RE.test(email.trim()) || email.length > 254) {
    throw errors.invalidRequest("email must be a valid email address.", "email");
  }
  if (typeof password !== "string" || password.length < 8) {
    throw errors.invalidRequest("password must be at least 8 characters.", "password");
  }
  if (password.length > 1024) throw errors.invalidRequest("password is too long (max 1024).", "password");
  return { email: email.trim().toLowerCase(), password };
}

/**
 * Registers an account with the signup credit (ledger kind `signup_credit`), a first API key and a
 * session. Returns the secrets (shown only here).
 * @throws AppError 400 invalid_request (bad email, password under 8), 409 email_taken.
 */
export async function register(
  db: Executor,
  body: { email?: unknown; password?: unknown },
): Promise<{ user_id: string; api_key: string; session_token: string }> {
  const { email, password } = validateCredentials(body.email, body.password);
  const passwordHash = await hashPassword(password);
  const accountId = newId("usr");
  const apiKey = newApiKeySecret();
  const session = newSessionToken();
  const now = Date.now();
  try {
    await inTransaction(db, async (trx) => {
      await trx
        .insertInto("accounts")
        .values({
          id: accountId,
          email,
          password_hash: passwordHash,
          balance_micros: 0,
          total_deposits_micros: 0,
          tier_override: null,
          limits_override: null,
          created_at: now,
        })
        .execute();
      await credit(trx, {
        accountId,
        kind: "signup_credit",
        amountMicros: SIGNUP_CREDIT_MICROS,
        reference: "signup",
      });
      await trx
        .insertInto("api_keys")
        .values({
          id: newId("key"),
          account_id: accountId,
          name: "default",
          key_hash: hashSecret(apiKey),
          prefix: apiKey.slice(0, 12),
          created_at: now,
          last_used_at: null,
        })
        .execute();
      await trx
        .insertInto("sessions")
        .values({
          id: newId("ses"),
          account_id: accountId,
          token_hash: hashSecret(session),
          created_at: now,
          expires_at: now + SESSION_TTL_MS,
        })
        .execute();
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.emailTaken();
    throw err;
  }
  return { user_id: accountId, api_key: apiKey, session_token: session };
}

/**
 * Logs in with email and password and opens a new session.
 * @throws AppError 401 auth_error with the same message for an unknown email and a wrong password (D2).
 */
export async function login(
  db: Executor,
  body: { email?: unknown; password?: unknown },
): Promise<{ user_id: string; session_token: string }> {
  if (typeof body.email !== "string" || typeof body.password !== "string") {
    throw errors.invalidRequest(
      "email and password are required strings.",
      typeof body.email !== "string" ? "email" : "password",
    );
  }
  const email = body.email.trim().toLowerCase();
  const row = await db
    .selectFrom("accounts")
    .select(["id", "password_hash"])
    .where("email", "=", email)
    .executeTakeFirst();
  const ok = await verifyPassword(body.password, row?.password_hash ?? null);
  if (!row || !ok) throw errors.auth("Wrong email or password.");
  const token = newSessionToken();
  const now = Date.now();
  await db
    .insertInto("sessions")
    .values({
      id: newId("ses"),
      account_id: row.id,
      token_hash: hashSecret(token),
      created_at: now,
      expires_at: now + SESSION_TTL_MS,
    })
    .execute();
  return { user_id: row.id, session_token: token };
}

// One round trip per request: the key and the account fields its limits derive from.
const keyByHash = prepare((db, p) =>
  db
    .selectFrom("api_keys")
    .innerJoin("accounts", "accounts.id", "api_keys.account_id")
    .select([
      "api_keys.id",
      "api_keys.account_id",
      "api_keys.key_hash",
      "api_keys.mode",
      "api_keys.expires_at",
      "api_keys.models_json",
      "api_keys.rpm",
      "api_keys.spend_limit_micros",
      "api_keys.spend_limit_period",
      "accounts.total_deposits_micros",
      "accounts.tier_override",
      "accounts.limits_override",
    ])
    .where("api_keys.key_hash", "=", p<string>(0)),
);
const sessionByHash = prepare((db, p) =>
  db
    .selectFrom("sessions")
    .innerJoin("accounts", "accounts.id", "sessions.account_id")
    .select([
      "sessions.account_id",
      "sessions.token_hash",
      "sessions.expires_at",
      "accounts.total_deposits_micros",
      "accounts.tier_override",
      "accounts.limits_override",
    ])
    .where("sessions.token_hash", "=", p<string>(0)),
);

/** Effective limits memoized by (tier, overrides): most accounts share a handful of rows. */
const limitsMemo = new Map<string, EffectiveLimits>();

/**
 * The effective limits of an account from its row's columns (also for rows read elsewhere: the job claim
 * reads them with its lock). The returned row is shared with other accounts of the same limits: read only.
 */
export function limitsOf(row: { total_deposits_micros: number; tier_override: number | null; limits_override: string | null }): EffectiveLimits {
  const tier = effectiveTier(Number(row.total_deposits_micros), row.tier_override === null ? null : Number(row.tier_override));
  const key = `${tier}|${row.limits_override ?? ""}`;
  let limits = limitsMemo.get(key);
  if (!limits) {
    if (limitsMemo.size > 10_000) limitsMemo.clear();
    limits = applyOverrides(tierRow(tier), row.limits_override);
    limitsMemo.set(key, limits);
  }
  return limits;
}

/**
 * The account's effective limits (its tier row with the operator's overrides, D12/D22), or null when the
 * account does not exist. The returned row is shared with other accounts of the same limits: read only.
 */
export async function effectiveLimits(db: Executor, accountId: string): Promise<EffectiveLimits | null> {
  const row = await db
    .selectFrom("accounts")
    .select(["total_deposits_micros", "tier_override", "limits_override"])
    .where("id", "=", accountId)
    .executeTakeFirst();
  return row ? limitsOf(row) : null;
}

/**
 * API keys resolved in the last {@link authCacheMs} ms, by secret hash (issue "Fast on the scale path":
 * one uncached key lookup per request was most of the gateway's PostgreSQL round trips once the ledger
 * was batched). An entry holds the principal as it was read: the account, the key's id and mode, and the
 * effective limits. What changes them in this process drops the account's entries at once
 * ({@link forgetAccountAuth}: key deletion, deposits, tier and limit overrides); another process sees the
 * change after at most the TTL. Money is never read from here: holds check the balance in the database.
 */
const authCache = new Map<string, { principal: Principal; expiresAt: number }>();
const AUTH_CACHE_MAX_ENTRIES = 100_000;
let authCacheMs = 2000;

/**
 * Sets how long (ms, 0 disables) a resolved API key is reused without reading the database again
 * (`AUTH_CACHE_MS`, default 2000): the longest a key deleted, or a limit changed, by another process
 * keeps its old effect here.
 */
export function configureAuthCache(ttlMs: number): void {
  authCacheMs = Math.max(0, ttlMs);
  authCache.clear();
}

/** Drops the cached keys of `accountId` (after its keys, deposits, tier or limits changed). */
export function forgetAccountAuth(accountId: string): void {
  for (const [hash, entry] of authCache) if (entry.principal.accountId === accountId) authCache.delete(hash);
}

/** Last-used timestamps are written at most once a minute per key, off the request's critical path. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;
const lastUsedWritten = new Map<string, number>();

/**
 * Resolves a bearer secret (API key `gw_...` or session token `sess_...`) to its account. `allowSession`
 * false accepts API keys only. Returns null when the secret is unknown, deleted or expired.
 */
export async function authenticate(
  db: Executor,
  secret: string,
  opts: { allowSession: boolean },
): Promise<Principal | null> {
  if (secret.length < 10 || secret.length > 200) return null;
  const hash = hashSecret(secret);
  if (secret.startsWith("sess_")) {
    if (!opts.allowSession) return null;
    const s = (await sessionByHash(db, hash)).rows[0];
    if (!s || !digestsEqual(s.token_hash, hash) || Number(s.expires_at) < Date.now()) return null;
    return { accountId: s.account_id, keyId: null, limits: limitsOf(s), mode: "live", key: null };
  }
  const now = Date.now();
  const cached = authCache.get(hash);
  if (cached && cached.expiresAt > now) return cached.principal;
  const k = (await keyByHash(db, hash)).rows[0];
  if (!k || !digestsEqual(k.key_hash, hash)) {
    authCache.delete(hash);
    return null;
  }
  if (now - (lastUsedWritten.get(k.id) ?? 0) > LAST_USED_WRITE_INTERVAL_MS) {
    if (lastUsedWritten.size > 100_000) lastUsedWritten.clear();
    lastUsedWritten.set(k.id, now);
    // Best effort: a failed timestamp write must never fail the request.
    db.updateTable("api_keys")
      .set({ last_used_at: now })
      .where("id", "=", k.id)
      .execute()
      .catch(() => {});
  }
  const principal: Principal = {
    accountId: k.account_id,
    keyId: k.id,
    limits: limitsOf(k),
    mode: k.mode === "test" ? "test" : "live",
    key: controlsOf(k),
  };
  if (authCacheMs > 0) {
    if (authCache.size >= AUTH_CACHE_MAX_ENTRIES) authCache.clear();
    authCache.set(hash, { principal, expiresAt: now + authCacheMs });
  }
  return principal;
}

/** The account fields the API shows. */
export interface AccountView {
  user_id: string;
  email: string;
  balance_usd: number;
  tier: number;
  tier_name: string;
  total_deposits_usd: number;
  created_at: string;
}

/** Loads an account's state: balance, deposits and effective tier (override wins). */
export async function getAccount(
  db: Executor,
  accountId: string,
): Promise<{
  id: string;
  email: string;
  balanceMicros: Micros;
  totalDepositsMicros: Micros;
  tier: number;
  tierOverride: number | null;
  createdAt: number;
} | null> {
  const a = await db
    .selectFrom("accounts")
    .select(["id", "email", "balance_micros", "total_deposits_micros", "tier_override", "created_at"])
    .where("id", "=", accountId)
    .executeTakeFirst();
  if (!a) return null;
  const totalDeposits = Number(a.total_deposits_micros);
  const override = a.tier_override === null ? null : Number(a.tier_override);
  return {
    id: a.id,
    email: a.email,
    balanceMicros: Number(a.balance_micros),
    totalDepositsMicros: totalDeposits,
    tier: effectiveTier(totalDeposits, override),
    tierOverride: override,
    createdAt: Number(a.created_at),
  };
}

/** `GET /v1/auth/me` (D8). @throws AppError 401 when the account vanished. */
export async function me(db: Executor, accountId: string): Promise<AccountView> {
  const a = await getAccount(db, accountId);
  if (!a) throw errors.auth();
  return {
    user_id: a.id,
    email: a.email,
    balance_usd: microsToUsd(a.balanceMicros),
    tier: a.tier,
    tier_name: tierRow(a.tier).name,
    total_deposits_usd: microsToUsd(a.totalDepositsMicros),
    created_at: new Date(a.createdAt).toISOString(),
  };
}

/** An API key as listed (D21, D34); the secret is never shown again. */
export interface KeyView extends KeyControlsView {
  key_id: string;
  name: string | null;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  /** `live` or `test` (D32). */
  mode: KeyMode;
}

const KEY_COLUMNS = [
  "id",
  "name",
  "prefix",
  "created_at",
  "last_used_at",
  "mode",
  "expires_at",
  "models_json",
  "rpm",
  "spend_limit_micros",
  "spend_limit_period",
  "spent_micros",
  "spent_period_start",
] as const;

type KeyRow = SpentKeyRow & { name: string | null; prefix: string; created_at: number; last_used_at: number | null; mode: KeyMode };

function keyView(r: KeyRow, spentMicros: Micros): KeyView {
  return {
    key_id: r.id,
    name: r.name,
    prefix: r.prefix,
    created_at: new Date(Number(r.created_at)).toISOString(),
    last_used_at: r.last_used_at === null ? null : new Date(Number(r.last_used_at)).toISOString(),
    mode: r.mode,
    ...controlsView(controlsOf(r), spentMicros),
  };
}

/**
 * `GET /v1/auth/keys`: the account's keys, oldest first, each with its controls and what it spent in its
 * current period (D34 `spent_usd`).
 */
export async function listKeys(db: Executor, accountId: string): Promise<KeyView[]> {
  const rows = await db
    .selectFrom("api_keys")
    .select([...KEY_COLUMNS])
    .where("account_id", "=", accountId)
    .orderBy("created_at", "asc")
    .orderBy("id", "asc")
    .execute();
  const spent = await spentOfKeys(db, accountId, rows);
  return rows.map((r) => keyView(r, spent.get(r.id) ?? 0));
}

/** The account's requests per minute, the most a key's own `rpm` may be (D34). @throws AppError 401 when the account vanished. */
async function accountRpm(db: Executor, accountId: string): Promise<number> {
  const limits = await effectiveLimits(db, accountId);
  if (limits === null) throw errors.auth();
  return limits.rpm;
}

/**
 * `PATCH /v1/auth/keys/{key_id}` (D34): changes the fields present in `body` (`name` and the controls;
 * `null` clears one). A new limit or period restarts the key's spend counter from the usage log of the
 * period. The change applies at once in this process and within `AUTH_CACHE_MS` in others.
 * @throws AppError 404 key_not_found (not the caller's key), 400 invalid_request (a bad field).
 */
export async function patchKey(
  db: Executor,
  accountId: string,
  keyId: string,
  body: KeyControlsBody & { name?: unknown },
): Promise<KeyView> {
  const update: KeyControlUpdate & { name?: string | null } = parseKeyControls(body, await accountRpm(db, accountId));
  if (body.name !== undefined) {
    if (body.name !== null && (typeof body.name !== "string" || body.name.length > 64)) {
      throw errors.invalidRequest("name must be a string of at most 64 characters.", "name");
    }
    update.name = body.name;
  }
  const view = await inTransaction(db, async (trx) => {
    const before = await trx.selectFrom("api_keys").select([...KEY_COLUMNS]).where("id", "=", keyId).where("account_id", "=", accountId).executeTakeFirst();
    if (!before) throw errors.keyNotFound();
    const limit = update.spend_limit_micros !== undefined ? update.spend_limit_micros : before.spend_limit_micros;
    const period = update.spend_limit_period ?? before.spend_limit_period ?? "month";
    const periodChanged = period !== (before.spend_limit_period ?? "month");
    const limitAdded = before.spend_limit_micros === null && limit !== null;
    if (limit !== null && before.mode === "live" && (limitAdded || periodChanged)) await restartKeyCounter(trx, accountId, keyId, period);
    if (Object.keys(update).length > 0) await trx.updateTable("api_keys").set(update).where("id", "=", keyId).execute();
    const after = await trx.selectFrom("api_keys").select([...KEY_COLUMNS]).where("id", "=", keyId).executeTakeFirstOrThrow();
    const spent = await spentOfKeys(trx, accountId, [after]);
    return keyView(after, spent.get(keyId) ?? 0);
  });
  forgetAccountAuth(accountId);
  return view;
}

/**
 * `POST /v1/auth/keys` `{name?, mode?}`: a new key sharing the account's balance and limits (D21);
 * `mode: "test"` makes a test-mode key `gw_test_...` (D32), `live` (the default) a `gw_...` key.
 * @throws AppError 400 when `name` is not a string of at most 64 characters or `mode` is neither.
 */
export async function createKey(
  db: Executor,
  accountId: string,
  body: { name?: unknown; mode?: unknown } & KeyControlsBody,
): Promise<{ key_id: string; name: string | null; api_key: string; created_at: string; mode: KeyMode } & KeyControlsView> {
  if (body.mode !== undefined && body.mode !== null && body.mode !== "live" && body.mode !== "test") {
    throw errors.invalidRequest("mode must be 'live' or 'test'.", "mode");
  }
  const mode: KeyMode = body.mode === "test" ? "test" : "live";
  if (
    body.name !== undefined &&
    body.name !== null &&
    (typeof body.name !== "string" || body.name.length > 64)
  ) {
    throw errors.invalidRequest("name must be a string of at most 64 characters.", "name");
  }
  const name = typeof body.name === "string" ? body.name : null;
  const controls = parseKeyControls(body, await accountRpm(db, accountId));
  const secret = newApiKeySecret(mode);
  const id = newId("key");
  const now = Date.now();
  await db
    .insertInto("api_keys")
    .values({
      id,
      account_id: accountId,
      name,
      key_hash: hashSecret(secret),
      prefix: secret.slice(0, 12),
      created_at: now,
      last_used_at: null,
      mode,
      ...controls,
      // A new key's counter starts in the current period with nothing spent.
      spent_micros: 0,
      spent_period_start: controls.spend_limit_micros != null ? periodStart(controls.spend_limit_period ?? "month", now) : 0,
    })
    .execute();
  const view = controlsView(
    controlsOf({
      expires_at: controls.expires_at ?? null,
      models_json: controls.models_json ?? null,
      rpm: controls.rpm ?? null,
      spend_limit_micros: controls.spend_limit_micros ?? null,
      spend_limit_period: controls.spend_limit_period ?? null,
    }),
    0,
  );
  return { key_id: id, name, api_key: secret, created_at: new Date(now).toISOString(), mode, ...view };
}

/**
 * `DELETE /v1/auth/keys/{key_id}`: the key stops working at once.
 * @throws AppError 404 key_not_found when the key is not the caller's (it keeps working, D24).
 */
export async function deleteKey(db: Executor, accountId: string, keyId: string): Promise<void> {
  const res = await db
    .deleteFrom("api_keys")
    .where("id", "=", keyId)
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  forgetAccountAuth(accountId);
  if (Number(res.numDeletedRows) === 0) throw errors.keyNotFound();
}
