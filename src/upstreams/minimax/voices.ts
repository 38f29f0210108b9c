/**
 * Voices on MiniMax: design, clone and the system catalog.
 *
 * | call | request | answer |
 * |---|---|---|
 * | design | `POST /v1/voice_design` `{prompt, preview_text, voice_id?}` | `{voice_id, trial_audio (hex), base_resp}` |
 * | upload | `POST /v1/files/upload` multipart `file` + `purpose=voice_clone` | `{file: {file_id (int64), bytes, created_at, filename, purpose}, base_resp}` |
 * | clone | `POST /v1/voice_clone` `{file_id, voice_id}` | `{input_sensitive, input_sensitive_type, demo_audio, base_resp}` |
 * | list | `POST /v1/get_voice` `{voice_type: "system"}` | `{system_voice: [{voice_id, voice_name, description[]}], base_resp}` |
 * Sources: MiniMax-AI/MiniMax-MCP `minimax_mcp/server.py` (`voice_design`, `voice_clone`, `list_voices`:
 * the same calls and fields), MiniMax-AI/cli `src/types/api.ts` (`FileUploadResponse`,
 * `VoiceListResponse`, `SystemVoiceInfo`).
 *
 * `file_id` is an int64: MiniMax writes it as a JSON number that can exceed 2^53, so it is read from
 * the answer's text exactly (api.ts `parseJsonExact`) and written back into the clone request as the
 * same digits (`JSON.rawJSON`), never through a JS number.
 *
 * The clone's `voice_id` is minted here (MiniMax requires the caller to name the new voice): `gw` and
 * 24 random letters and digits (26 characters, starts with a letter, `[A-Za-z0-9]`, ends with neither
 * `-` nor `_`), about 143 bits of randomness, so unique without asking MiniMax first. The gateway's
 * own `svc_` id is kept apart by the caller.
 */
import { randomInt } from "node:crypto";
import { newKeyedForm } from "../keyed-http.ts";
import { isRecord } from "../util.ts";
import type { VoiceCloneRequest, VoiceDesignRequest, VoiceRecord } from "../types.ts";
import type { MiniMaxApi } from "./api.ts";
import { parseJsonExact } from "./api.ts";

/** MiniMax requires `preview_text`; this one is used when the request has none. */
export const DEFAULT_PREVIEW_TEXT = "Hello! This is a preview of my new voice. I hope you enjoy listening to it as much as I enjoyed recording it.";

/** The content type and file extension of each reference format. */
const CLONE_FILES: Record<VoiceCloneRequest["format"], { type: string; ext: string }> = {
  mp3: { type: "audio/mpeg", ext: "mp3" },
  wav: { type: "audio/wav", ext: "wav" },
  m4a: { type: "audio/mp4", ext: "m4a" },
};

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A new upstream voice id for a clone (see the module comment). */
export function mintVoiceId(): string {
  let id = "gw";
  for (let i = 0; i < 24; i++) id += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return id;
}

/** The design prompt: the description with gender and age folded in (`... Gender: female. Age: elderly.`). */
export function designPrompt(req: VoiceDesignRequest): string {
  const parts = [req.description.trim()];
  if (req.gender !== null) parts.push(`Gender: ${req.gender}.`);
  if (req.ageGroup !== null) parts.push(`Age: ${req.ageGroup}.`);
  return parts.filter((p) => p !== "").join(" ");
}

/** Designs a voice; returns MiniMax's id of it. Throws api.ts `MiniMaxError`. */
export async function designVoice(api: MiniMaxApi, req: VoiceDesignRequest, signal?: AbortSignal): Promise<{ upstreamVoiceId: string }> {
  const previewText = req.previewText !== null && req.previewText.trim() !== "" ? req.previewText : DEFAULT_PREVIEW_TEXT;
  const answer = await api.postJson("/v1/voice_design", { prompt: designPrompt(req), preview_text: previewText }, { what: "voice_design" }, signal);
  if (typeof answer.voice_id !== "string" || answer.voice_id === "") throw api.malformed("voice_design", "no voice_id");
  return { upstreamVoiceId: answer.voice_id };
}

/** Uploads the reference and clones it under a minted id; returns that id. Throws api.ts `MiniMaxError`. */
export async function cloneVoice(api: MiniMaxApi, req: VoiceCloneRequest, signal?: AbortSignal): Promise<{ upstreamVoiceId: string }> {
  const file = CLONE_FILES[req.format];
  if (file === undefined) throw api.malformed("voice_clone", `unknown reference format ${String(req.format)}`);
  const form = newKeyedForm();
  form.append("purpose", "voice_clone");
  form.append("file", new Blob([req.audio], { type: file.type }), `reference.${file.ext}`);
  const what = "files/upload";
  const upload = await api.sendForBytes("POST", api.url("/v1/files/upload"), { form }, {}, signal);
  const text = Buffer.from(upload.body.buffer, upload.body.byteOffset, upload.body.byteLength).toString("utf8");
  const uploaded = api.checked(upload.status, parseJsonExact(text, ["file_id"]), text, { what });
  const fileId = isRecord(uploaded.file) ? uploaded.file.file_id : undefined;
  if (typeof fileId !== "string" || fileId === "") throw api.malformed(what, "no file.file_id");

  const voiceId = mintVoiceId();
  await api.postJson("/v1/voice_clone", { file_id: exactId(fileId), voice_id: voiceId }, { what: "voice_clone" }, signal);
  return { upstreamVoiceId: voiceId };
}

/** The system voices as library records of the beta provider. Throws api.ts `MiniMaxError`. */
export async function listSystemVoices(api: MiniMaxApi, signal?: AbortSignal): Promise<VoiceRecord[]> {
  const answer = await api.postJson("/v1/get_voice", { voice_type: "system" }, { what: "get_voice" }, signal);
  const list = answer.system_voice;
  if (list !== undefined && list !== null && !Array.isArray(list)) throw api.malformed("get_voice", "system_voice is not a list");
  const out: VoiceRecord[] = [];
  for (const v of list ?? []) {
    if (!isRecord(v) || typeof v.voice_id !== "string" || v.voice_id === "") continue;
    const name = typeof v.voice_name === "string" && v.voice_name !== "" ? v.voice_name : v.voice_id;
    const description = Array.isArray(v.description) ? v.description.filter((d): d is string => typeof d === "string") : [];
    out.push({ provider: "beta", voice_id: v.voice_id, name, description });
  }
  return out;
}

/** The JSON value of an int64 id: its exact digits as a JSON number, or the string when it is not digits. */
function exactId(id: string): unknown {
  if (!/^\d{1,20}$/.test(id)) return id;
  const raw = (JSON as unknown as { rawJSON?: (text: string) => unknown }).rawJSON;
  // Node 24 has JSON.rawJSON; a number within 2^53 is exact anyway.
  if (raw !== undefined) return raw(id);
  return Number.isSafeInteger(Number(id)) ? Number(id) : id;
}
