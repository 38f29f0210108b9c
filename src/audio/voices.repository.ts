/**
 * The SQL of owned voices (spec "Voice"; D20): the `voices` table, read by voices.ts and written by the
 * paid flow of voice design and cloning (voice-design.ts) in its capture's transaction.
 */
import type { Transaction } from "kysely";
import type { Executor } from "../billing/ledger.ts";
import type { Database } from "../storage/schema.ts";

/** The owner, the upstream's id (null: the voice's own id) and the source (null: the simulator) of voice `voiceId`, or null. */
export async function ownedVoiceRow(
  db: Executor,
  voiceId: string,
): Promise<{ accountId: string; upstreamVoiceId: string | null; upstreamSource: string | null } | null> {
  const row = await db
    .selectFrom("voices")
    .select(["account_id", "upstream_voice_id", "upstream_source"])
    .where("id", "=", voiceId)
    .executeTakeFirst();
  return row ? { accountId: row.account_id, upstreamVoiceId: row.upstream_voice_id, upstreamSource: row.upstream_source } : null;
}

/** Inserts a designed or cloned voice (`createdAt` epoch ms), in the transaction that captures its price. */
export async function insertOwnedVoice(
  trx: Transaction<Database>,
  v: {
    id: string;
    accountId: string;
    name: string | null;
    source: "design" | "clone";
    upstreamVoiceId: string;
    upstreamSource: string | null;
    description: string | null;
    createdAt: number;
  },
): Promise<void> {
  await trx
    .insertInto("voices")
    .values({
      id: v.id,
      account_id: v.accountId,
      name: v.name,
      source: v.source,
      upstream_voice_id: v.upstreamVoiceId,
      upstream_source: v.upstreamSource,
      description: v.description,
      created_at: v.createdAt,
    })
    .execute();
}

/** The designed and cloned voices of `accountId`, oldest first (`createdAt` epoch ms). */
export async function ownedVoiceRows(
  db: Executor,
  accountId: string,
): Promise<{ id: string; name: string | null; source: "design" | "clone"; description: string | null; createdAt: number }[]> {
  const rows = await db
    .selectFrom("voices")
    .select(["id", "name", "source", "description", "created_at"])
    .where("account_id", "=", accountId)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.name, source: r.source, description: r.description, createdAt: Number(r.created_at) }));
}
