/**
 * SQL of the `api_keys` table (D21, D24, D34): the key lookup of authentication (compiled once), the
 * key rows the key management lists and changes, inserts and deletes. Free functions taking the database
 * or a transaction first (the team's SQL decision).
 */
import type { Insertable } from "kysely";
import type { Executor } from "../billing/ledger.ts";
import { prepare } from "../storage/prepared.ts";
import type { AccountLimitsRow } from "../storage/job-queue.ts";
import type { ApiKeysTable, KeyMode, Role } from "../storage/schema.ts";
import type { KeyControlColumns, KeyControlUpdate, SpentKeyRow } from "./key-controls.ts";

/** The columns of a key as listed (D21, D34). */
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
  "created_by",
  "role",
] as const;

/** A key row as listed: its controls' columns (D34), its spend counter and what `GET /v1/auth/keys` shows. */
export type KeyRow = SpentKeyRow & {
  name: string | null;
  prefix: string;
  created_at: number;
  last_used_at: number | null;
  mode: KeyMode;
  /** The member who made the key (D41), or null. */
  created_by: string | null;
  /** What the key may manage (D41). */
  role: Role;
};

/** A new key row (its secret only as a hash, D24); unset control columns take their defaults. */
export type NewApiKeyRow = Insertable<ApiKeysTable>;

/** Inserts a key. */
export async function insertApiKey(db: Executor, row: NewApiKeyRow): Promise<void> {
  await db.insertInto("api_keys").values(row).execute();
}

// One round trip per request: the key and the account fields its limits derive from.
const keyByHashQuery = prepare((db, p) =>
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
      "api_keys.created_by",
      "api_keys.role",
      "accounts.total_deposits_micros",
      "accounts.tier_override",
      "accounts.limits_override",
      "accounts.has_budgets",
    ])
    .where("api_keys.key_hash", "=", p<string>(0)),
);

/** A key as authentication reads it: its controls' columns (D34) and its account's limits columns. */
export interface AuthKeyRow extends KeyControlColumns, AccountLimitsRow {
  id: string;
  accountId: string;
  keyHash: string;
  mode: KeyMode;
  /** The member who made the key (D41), or null. */
  createdBy: string | null;
  /** What the key may manage (D41). */
  role: Role;
  /** Whether the key's organization has budgets (D44). */
  hasBudgets: boolean;
}

/** The key whose secret hashes to `keyHash`, with its account's limits columns, or null. Compiled once. */
export async function keyByHash(db: Executor, keyHash: string): Promise<AuthKeyRow | null> {
  const k = (await keyByHashQuery(db, keyHash)).rows[0];
  if (!k) return null;
  return {
    id: k.id,
    accountId: k.account_id,
    keyHash: k.key_hash,
    mode: k.mode,
    createdBy: k.created_by,
    role: k.role,
    expires_at: k.expires_at,
    models_json: k.models_json,
    rpm: k.rpm,
    spend_limit_micros: k.spend_limit_micros,
    spend_limit_period: k.spend_limit_period,
    total_deposits_micros: k.total_deposits_micros,
    tier_override: k.tier_override,
    limits_override: k.limits_override,
    hasBudgets: Number(k.has_budgets) === 1,
  };
}

/** Records when the key was last used, epoch ms. */
export async function touchKeyLastUsed(db: Executor, keyId: string, nowMs: number): Promise<void> {
  await db.updateTable("api_keys").set({ last_used_at: nowMs }).where("id", "=", keyId).execute();
}

/** The account's keys, oldest first (then by id). */
export async function keyRowsOf(db: Executor, accountId: string): Promise<KeyRow[]> {
  return db
    .selectFrom("api_keys")
    .select([...KEY_COLUMNS])
    .where("account_id", "=", accountId)
    .orderBy("created_at", "asc")
    .orderBy("id", "asc")
    .execute();
}

/** The key `keyId` of the account, or null when the account has no such key. */
export async function keyRowOf(db: Executor, accountId: string, keyId: string): Promise<KeyRow | null> {
  const row = await db.selectFrom("api_keys").select([...KEY_COLUMNS]).where("id", "=", keyId).where("account_id", "=", accountId).executeTakeFirst();
  return row ?? null;
}

/** Sets the key's name and controls present in `update` (D34; `null` clears one). */
export async function updateKeyRow(
  db: Executor,
  keyId: string,
  update: KeyControlUpdate & { name?: string | null },
): Promise<void> {
  await db.updateTable("api_keys").set(update).where("id", "=", keyId).execute();
}

/** Deletes the account's key `keyId`. @returns false when the account has no such key. */
export async function deleteKeyRow(db: Executor, accountId: string, keyId: string): Promise<boolean> {
  const res = await db.deleteFrom("api_keys").where("id", "=", keyId).where("account_id", "=", accountId).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}
