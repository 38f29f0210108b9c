/**
 * SQL of an organization's own retention windows (D46, accounts/retention.ts): the two columns of its
 * `accounts` row. Free functions taking the database or a transaction first.
 */
import type { Executor } from "../billing/ledger.ts";

/** An organization's own windows, days; null: the operator's. */
export interface OwnWindowsRow {
  id: string;
  promptsDays: number | null;
  outputsDays: number | null;
}

const toNumber = (v: number | string | null): number | null => (v === null ? null : Number(v));

/** The own windows of each of `orgIds` that exists. One read. */
export async function ownWindowsOf(db: Executor, orgIds: readonly string[]): Promise<OwnWindowsRow[]> {
  if (orgIds.length === 0) return [];
  const rows = await db
    .selectFrom("accounts")
    .select(["id", "retention_prompts_days", "retention_outputs_days"])
    .where("id", "in", [...orgIds])
    .execute();
  return rows.map((r) => ({ id: r.id, promptsDays: toNumber(r.retention_prompts_days), outputsDays: toNumber(r.retention_outputs_days) }));
}

/** The organization's own prompts window (days), null for the operator's; undefined when there is no such organization. */
export async function ownPromptsDays(db: Executor, orgId: string): Promise<number | null | undefined> {
  const row = await db.selectFrom("accounts").select("retention_prompts_days").where("id", "=", orgId).executeTakeFirst();
  return row === undefined ? undefined : toNumber(row.retention_prompts_days);
}

/** Sets the given windows of `orgId` (absent: unchanged; null: back to the operator's). */
export async function updateOwnWindows(db: Executor, orgId: string, w: { promptsDays?: number | null; outputsDays?: number | null }): Promise<void> {
  const set: { retention_prompts_days?: number | null; retention_outputs_days?: number | null } = {};
  if (w.promptsDays !== undefined) set.retention_prompts_days = w.promptsDays;
  if (w.outputsDays !== undefined) set.retention_outputs_days = w.outputsDays;
  if (Object.keys(set).length === 0) return;
  await db.updateTable("accounts").set(set).where("id", "=", orgId).execute();
}

/** Every organization with a window of its own (the retention sweep's shorter windows). */
export async function orgsWithOwnWindows(db: Executor): Promise<OwnWindowsRow[]> {
  const rows = await db
    .selectFrom("accounts")
    .select(["id", "retention_prompts_days", "retention_outputs_days"])
    .where((eb) => eb.or([eb("retention_prompts_days", "is not", null), eb("retention_outputs_days", "is not", null)]))
    .execute();
  return rows.map((r) => ({ id: r.id, promptsDays: toNumber(r.retention_prompts_days), outputsDays: toNumber(r.retention_outputs_days) }));
}
