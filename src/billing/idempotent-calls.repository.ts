/**
 * The SQL of idempotent synchronous calls (D37, billing/idempotent-calls.ts): the `idempotent_calls` row of a
 * `(scope, key)`, claimed by one request at a time. Every write that belongs to a claimant is conditional on
 * its `owner` (the claimant's request id) and state, so a request whose lease lapsed and was taken over can
 * no longer complete or release the row of its successor. Times are epoch ms.
 */
import type { Kysely } from "kysely";
import type { Database, IdempotentCallsTable } from "../storage/schema.ts";

/** A row as the service reads it. */
export type IdempotentCallRow = IdempotentCallsTable;

/** What a claim writes. */
export interface ClaimValues {
  scope: string;
  key: string;
  accountId: string;
  requestHash: string;
  owner: string;
  now: number;
  leaseUntil: number;
}

/** The columns of a running claim by `v` (inserted, or written over an expired row). */
function runningColumns(v: ClaimValues) {
  return {
    account_id: v.accountId,
    request_hash: v.requestHash,
    state: "running" as const,
    owner: v.owner,
    status: null,
    headers_json: null,
    blob_key: null,
    created_at: v.now,
    expires_at: v.leaseUntil,
  };
}

/**
 * Inserts the running row of a first request; false (nothing written) when the key already has a row: a
 * concurrent insert of the same key loses on the primary key, on either database.
 */
export async function insertRunning(db: Kysely<Database>, v: ClaimValues): Promise<boolean> {
  const row = await db
    .insertInto("idempotent_calls")
    .values({ scope: v.scope, idem_key: v.key, ...runningColumns(v) })
    .onConflict((oc) => oc.columns(["scope", "idem_key"]).doNothing())
    .returning("owner")
    .executeTakeFirst();
  return row !== undefined;
}

/** The row of `(scope, key)`, or undefined. */
export async function callRow(db: Kysely<Database>, scope: string, key: string): Promise<IdempotentCallRow | undefined> {
  const row = await db.selectFrom("idempotent_calls").selectAll().where("scope", "=", scope).where("idem_key", "=", key).executeTakeFirst();
  if (row === undefined) return undefined;
  return {
    ...row,
    status: row.status === null ? null : Number(row.status),
    created_at: Number(row.created_at),
    expires_at: Number(row.expires_at),
  };
}

/**
 * Takes over an expired row (a running claimant's lapsed lease, or a stored answer past its time) as the
 * running row of a new claimant. Conditional on the row being exactly as read (`owner` and `expires_at`),
 * so of two requests taking over the same row one wins. Returns whether this one did.
 */
export async function takeOver(db: Kysely<Database>, read: { owner: string; expiresAt: number }, v: ClaimValues): Promise<boolean> {
  const res = await db
    .updateTable("idempotent_calls")
    .set(runningColumns(v))
    .where("scope", "=", v.scope)
    .where("idem_key", "=", v.key)
    .where("owner", "=", read.owner)
    .where("expires_at", "=", read.expiresAt)
    .where("expires_at", "<=", v.now)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Extends the running claimant's lease to `leaseUntil`; false when the row is no longer its own. */
export async function renewLease(db: Kysely<Database>, scope: string, key: string, owner: string, leaseUntil: number): Promise<boolean> {
  const res = await db
    .updateTable("idempotent_calls")
    .set({ expires_at: leaseUntil })
    .where("scope", "=", scope)
    .where("idem_key", "=", key)
    .where("owner", "=", owner)
    .where("state", "=", "running")
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Stores the claimant's answer and marks the row done until `expiresAt`; false when the row is no longer its own. */
export async function markDone(
  db: Kysely<Database>,
  scope: string,
  key: string,
  owner: string,
  answer: { status: number; headersJson: string; blobKey: string; expiresAt: number },
): Promise<boolean> {
  const res = await db
    .updateTable("idempotent_calls")
    .set({ state: "done", status: answer.status, headers_json: answer.headersJson, blob_key: answer.blobKey, expires_at: answer.expiresAt })
    .where("scope", "=", scope)
    .where("idem_key", "=", key)
    .where("owner", "=", owner)
    .where("state", "=", "running")
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Deletes the claimant's running row (its call failed: the key is free again). */
export async function deleteRunning(db: Kysely<Database>, scope: string, key: string, owner: string): Promise<void> {
  await db
    .deleteFrom("idempotent_calls")
    .where("scope", "=", scope)
    .where("idem_key", "=", key)
    .where("owner", "=", owner)
    .where("state", "=", "running")
    .execute();
}

/** Up to `limit` rows expired at `now` (stored answers past their 24 h, running rows whose lease lapsed). */
export async function expiredRows(db: Kysely<Database>, now: number, limit: number): Promise<{ scope: string; idem_key: string; owner: string; expires_at: number; blob_key: string | null }[]> {
  const rows = await db
    .selectFrom("idempotent_calls")
    .select(["scope", "idem_key", "owner", "expires_at", "blob_key"])
    .where("expires_at", "<", now)
    .orderBy("expires_at")
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, expires_at: Number(r.expires_at) }));
}

/** Deletes an expired row as it was read (not one taken over since); whether it was deleted. */
export async function deleteExpired(db: Kysely<Database>, row: { scope: string; idem_key: string; owner: string; expires_at: number }): Promise<boolean> {
  const res = await db
    .deleteFrom("idempotent_calls")
    .where("scope", "=", row.scope)
    .where("idem_key", "=", row.idem_key)
    .where("owner", "=", row.owner)
    .where("expires_at", "=", row.expires_at)
    .executeTakeFirst();
  return Number(res.numDeletedRows) === 1;
}

/** The status of the usage record of request `requestId` (D29), or null when the request wrote none. */
export async function usageStatusOf(db: Kysely<Database>, requestId: string): Promise<string | null> {
  const row = await db.selectFrom("usage_records").select("status").where("id", "=", requestId).executeTakeFirst();
  return row?.status ?? null;
}
