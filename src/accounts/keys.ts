/**
 * API key management (D21, D24, D32, D34): listing the account's keys with their controls and spend,
 * creating, changing and deleting keys. Secrets are returned once, at creation, and stored only as
 * SHA-256 hashes. A change drops the account's cached keys ({@link AccountAuthChanges}) so it applies at
 * once in this process and within `AUTH_CACHE_MS` in others.
 */
import { periodStart, restartKeyCounter } from "../billing/key-spend.ts";
import type { CreateKeyBody, PatchKeyBody } from "../contracts/auth.ts";
import { type Executor, inTransaction } from "../billing/ledger.ts";
import type { Micros } from "../money.ts";
import { errors } from "../errors.ts";
import { newId } from "../ids.ts";
import type { KeyMode } from "../storage/schema.ts";
import type { AccountAuthChanges } from "./auth-cache.ts";
import {
  controlsOf,
  controlsView,
  type KeyControlsView,
  type KeyControlUpdate,
  parseKeyControls,
  spentOfKeys,
} from "./key-controls.ts";
import { deleteKeyRow, insertApiKey, keyRowOf, keyRowsOf, type KeyRow, updateKeyRow } from "./keys.repository.ts";
import { effectiveLimits } from "./limits.ts";
import { hashSecret, newApiKeySecret } from "./secrets.ts";

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
  const rows = await keyRowsOf(db, accountId);
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
 * period. The change applies at once in this process (`auth` drops the account's cached keys) and within
 * `AUTH_CACHE_MS` in others.
 * @throws AppError 404 key_not_found (not the caller's key), 400 invalid_request (a bad field).
 */
export async function patchKey(
  db: Executor,
  auth: AccountAuthChanges,
  accountId: string,
  keyId: string,
  body: PatchKeyBody,
): Promise<KeyView> {
  const update: KeyControlUpdate & { name?: string | null } = parseKeyControls(body, await accountRpm(db, accountId));
  if (body.name !== undefined) {
    if (body.name !== null && (typeof body.name !== "string" || body.name.length > 64)) {
      throw errors.invalidRequest("name must be a string of at most 64 characters.", "name");
    }
    update.name = body.name;
  }
  const view = await inTransaction(db, async (trx) => {
    const before = await keyRowOf(trx, accountId, keyId);
    if (!before) throw errors.keyNotFound();
    const limit = update.spend_limit_micros !== undefined ? update.spend_limit_micros : before.spend_limit_micros;
    const period = update.spend_limit_period ?? before.spend_limit_period ?? "month";
    const periodChanged = period !== (before.spend_limit_period ?? "month");
    const limitAdded = before.spend_limit_micros === null && limit !== null;
    if (limit !== null && before.mode === "live" && (limitAdded || periodChanged)) await restartKeyCounter(trx, accountId, keyId, period);
    if (Object.keys(update).length > 0) await updateKeyRow(trx, keyId, update);
    const after = await keyRowOf(trx, accountId, keyId);
    if (!after) throw errors.keyNotFound();
    const spent = await spentOfKeys(trx, accountId, [after]);
    return keyView(after, spent.get(keyId) ?? 0);
  });
  auth.forgetAccount(accountId);
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
  body: CreateKeyBody,
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
  await insertApiKey(db, {
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
  });
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
 * `DELETE /v1/auth/keys/{key_id}`: the key stops working at once (`auth` drops the account's cached keys).
 * @throws AppError 404 key_not_found when the key is not the caller's (it keeps working, D24).
 */
export async function deleteKey(db: Executor, auth: AccountAuthChanges, accountId: string, keyId: string): Promise<void> {
  const deleted = await deleteKeyRow(db, accountId, keyId);
  auth.forgetAccount(accountId);
  if (!deleted) throw errors.keyNotFound();
}
