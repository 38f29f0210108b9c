/**
 * API key management (D21, D24, D32, D34, D41): listing the organization's keys with their controls and
 * spend, creating, changing and deleting keys. A key belongs to the organization, records the member who
 * made it and acts with that member's role at creation, at most `admin` (roles.ts `keyRoleFor`); members
 * change and delete only their own keys, admins and owners every key. Secrets are returned once, at creation, and stored only as
 * SHA-256 hashes. A change drops the account's cached keys ({@link AccountAuthChanges}) so it applies at
 * once in this process and within `AUTH_CACHE_MS` in others. Each change writes its audit entry (D45:
 * `key.created`, `key.updated`, `key.revoked`) in its own transaction, never the secret.
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
import { atLeast, keyRoleFor, type Role } from "./roles.ts";
import { type AuditContext, changesOf, recordAudit } from "./audit.ts";

/** Who manages keys (D41): the organization, the member and the member's role. */
export interface KeyCaller {
  accountId: string;
  userId: string | null;
  role: Role;
}

/**
 * Refuses a change of another member's key by a caller below `admin` (D41).
 * @throws AppError 403 `forbidden_role`.
 */
function assertMayManage(caller: KeyCaller, key: KeyRow): void {
  if (atLeast(caller.role, "admin")) return;
  if (caller.userId !== null && key.created_by === caller.userId) return;
  throw errors.forbiddenRole("Only admins and owners may change or delete another member's key; members manage their own keys.");
}
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
  /** The member who made it (D41), or null. */
  created_by: string | null;
  /** The role the key acts with (D41). */
  role: Role;
}

function keyView(r: KeyRow, spentMicros: Micros): KeyView {
  return {
    key_id: r.id,
    name: r.name,
    prefix: r.prefix,
    created_at: new Date(Number(r.created_at)).toISOString(),
    last_used_at: r.last_used_at === null ? null : new Date(Number(r.last_used_at)).toISOString(),
    mode: r.mode,
    created_by: r.created_by,
    role: r.role,
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

/** The fields of a key the audit log compares (D45): what `PATCH` may change, as the API shows them. */
const AUDITED_KEY_FIELDS = ["name", "spend_limit_usd", "spend_limit_period", "expires_at", "models", "rpm"] as const;

/**
 * `PATCH /v1/auth/keys/{key_id}` (D34): changes the fields present in `body` (`name` and the controls;
 * `null` clears one). A new limit or period restarts the key's spend counter from the usage log of the
 * period. The change applies at once in this process (`auth` drops the account's cached keys) and within
 * `AUTH_CACHE_MS` in others. Writes `key.updated` (D45) with the fields that changed, as `audit`.
 * @throws AppError 404 key_not_found (not the caller's key), 400 invalid_request (a bad field), 403
 *   forbidden_role (another member's key, for a caller below admin; D41).
 */
export async function patchKey(
  db: Executor,
  auth: AccountAuthChanges,
  caller: KeyCaller,
  keyId: string,
  body: PatchKeyBody,
  audit: AuditContext,
): Promise<KeyView> {
  const { accountId } = caller;
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
    assertMayManage(caller, before);
    const limit = update.spend_limit_micros !== undefined ? update.spend_limit_micros : before.spend_limit_micros;
    const period = update.spend_limit_period ?? before.spend_limit_period ?? "month";
    const periodChanged = period !== (before.spend_limit_period ?? "month");
    const limitAdded = before.spend_limit_micros === null && limit !== null;
    if (limit !== null && before.mode === "live" && (limitAdded || periodChanged)) await restartKeyCounter(trx, accountId, keyId, period);
    if (Object.keys(update).length > 0) await updateKeyRow(trx, keyId, update);
    const after = await keyRowOf(trx, accountId, keyId);
    if (!after) throw errors.keyNotFound();
    const spent = await spentOfKeys(trx, accountId, [after]);
    const view = keyView(after, spent.get(keyId) ?? 0);
    const changes = changesOf({ ...keyView(before, 0) }, { ...view }, AUDITED_KEY_FIELDS);
    await recordAudit(trx, audit, { orgId: accountId, action: "key.updated", target: { type: "key", id: keyId }, changes });
    return view;
  });
  auth.forgetAccount(accountId);
  return view;
}

/**
 * `POST /v1/auth/keys` `{name?, mode?, role?}`: a new key sharing the organization's balance and limits
 * (D21, D41); `mode: "test"` makes a test-mode key `gw_test_...` (D32), `live` (the default) a `gw_...`
 * key. The key records its creator and acts with `role`, by default and at most the creator's (an
 * owner's: `admin`). Writes `key.created` (D45, as `audit`) in the transaction of the insert, with the
 * key's name, mode, role and controls; never its secret.
 * @throws AppError 400 when `name` is not a string of at most 64 characters or `mode` is neither, 403
 *   `forbidden_role` for a role above the creator's.
 */
export async function createKey(
  db: Executor,
  caller: KeyCaller,
  body: CreateKeyBody,
  audit: AuditContext,
): Promise<{ key_id: string; name: string | null; api_key: string; created_at: string; mode: KeyMode; created_by: string | null; role: Role } & KeyControlsView> {
  const { accountId } = caller;
  const most = keyRoleFor(caller.role);
  const role: Role = body.role ?? most;
  if (!atLeast(most, role)) throw errors.forbiddenRole(`A key can act at most with its creator's role (${most}); '${role}' is above it.`);
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
  await inTransaction(db, async (trx) => {
    await insertApiKey(trx, {
      id,
      account_id: accountId,
      created_by: caller.userId,
      role,
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
    // The key as made (fields left empty are not listed; a period without a limit says nothing).
    const { spent_usd: _spent, spend_limit_period, ...shown } = view;
    const period = view.spend_limit_usd === null ? {} : { spend_limit_period };
    await recordAudit(trx, audit, { orgId: accountId, action: "key.created", target: { type: "key", id }, changes: changesOf(null, { name, mode, role, ...shown, ...period }) });
  });
  return { key_id: id, name, api_key: secret, created_at: new Date(now).toISOString(), mode, created_by: caller.userId, role, ...view };
}

/**
 * `DELETE /v1/auth/keys/{key_id}`: the key stops working at once (`auth` drops the account's cached keys).
 * Writes `key.revoked` (D45, as `audit`) in the transaction of the deletion.
 * @throws AppError 404 key_not_found when the key is not the caller's organization's (it keeps working,
 *   D24), 403 forbidden_role for another member's key and a caller below admin (D41).
 */
export async function deleteKey(db: Executor, auth: AccountAuthChanges, caller: KeyCaller, keyId: string, audit: AuditContext): Promise<void> {
  const { accountId } = caller;
  try {
    await inTransaction(db, async (trx) => {
      const key = await keyRowOf(trx, accountId, keyId);
      if (!key) throw errors.keyNotFound();
      assertMayManage(caller, key);
      if (!(await deleteKeyRow(trx, accountId, keyId))) throw errors.keyNotFound();
      await recordAudit(trx, audit, { orgId: accountId, action: "key.revoked", target: { type: "key", id: keyId }, changes: { name: [key.name, null] } });
    });
  } finally {
    auth.forgetAccount(accountId);
  }
}
