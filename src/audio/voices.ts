/**
 * Ownership of designed and cloned voices (spec "Voice"; D20). Only this module (and its SQL,
 * voices.repository.ts) reads the `voices` table.
 */
import type { Executor } from "../billing/ledger.ts";
import { ownedVoiceRow, ownedVoiceRows } from "./voices.repository.ts";

/** Prefix of designed and cloned voice ids (`svc_<random>`). */
export const OWNED_VOICE_PREFIX = "svc_";

/** An owned voice: its owner, the upstream's id of it and the source it lives on (null: the simulator, D27). */
export interface OwnedVoice {
  accountId: string;
  upstreamVoiceId: string;
  upstreamSource: string | null;
}

/** The owned voice `voiceId`, or null when the id is not on file (then it is a beta system voice, D20). */
export async function findOwnedVoice(db: Executor, voiceId: string): Promise<OwnedVoice | null> {
  if (!voiceId.startsWith(OWNED_VOICE_PREFIX)) return null;
  const row = await ownedVoiceRow(db, voiceId);
  return row ? { accountId: row.accountId, upstreamVoiceId: row.upstreamVoiceId ?? voiceId, upstreamSource: row.upstreamSource } : null;
}

/** A designed or cloned voice as its owner lists it (`createdAt` epoch ms). */
export interface OwnedVoiceSummary {
  voiceId: string;
  name: string | null;
  source: "design" | "clone";
  description: string | null;
  createdAt: number;
}

/** The designed and cloned voices `accountId` owns, oldest first (D20; listed by the ElevenLabs dialect, D36). */
export async function listOwnedVoices(db: Executor, accountId: string): Promise<OwnedVoiceSummary[]> {
  return (await ownedVoiceRows(db, accountId)).map((r) => ({ voiceId: r.id, name: r.name, source: r.source, description: r.description, createdAt: r.createdAt }));
}
