/**
 * Ownership of designed and cloned voices (spec "Voice"; D20). Only this module reads the `voices` table.
 */
import type { Executor } from "../billing/ledger.ts";

/** Prefix of designed and cloned voice ids (`svc_<random>`). */
export const OWNED_VOICE_PREFIX = "svc_";

/** The account owning `voiceId`, or null when the id is not on file (then it is a beta system voice). */
export async function findVoiceOwner(db: Executor, voiceId: string): Promise<string | null> {
  if (!voiceId.startsWith(OWNED_VOICE_PREFIX)) return null;
  const row = await db.selectFrom("voices").select("account_id").where("id", "=", voiceId).executeTakeFirst();
  return row ? row.account_id : null;
}
