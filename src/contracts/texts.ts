/**
 * The texts of a request (D46): what the retention windows remove from what the gateway stores, and what
 * zero retention never writes. A request's texts are its words: the text to speak, prompts, lyrics,
 * descriptions, chat messages. Pure functions over JSON values; the callers decide when (jobs/retention.ts,
 * jobs/submit.ts, audio/generate.ts, jobs/dialect-facts.ts).
 *
 * Two rules:
 * - a request the gateway knows the shape of loses its text fields ({@link TEXT_FIELDS}) and keeps the
 *   rest (model, voice, format, sizes, durations: what the job API still answers with);
 * - a free-form object passed through as the caller sent it (a job's `parameters`, a dialect's echo of the
 *   input) cannot be told apart field by field, so it loses every string, at any depth, and keeps its
 *   numbers, booleans and nulls (a seed, a guidance scale, a flag).
 */

/** The fields of a request the gateway knows that hold its words (speech, music, sound effects, images, video, chat). */
export const TEXT_FIELDS: ReadonlySet<string> = new Set([
  "prompt",
  "text",
  "input",
  "lyrics",
  "negative_prompt",
  "description",
  "messages",
  "system",
  "instructions",
]);

/** Fields of a known request whose value is free-form (passed through as sent): cleared by {@link withoutStrings}. */
const FREE_FORM_FIELDS: ReadonlySet<string> = new Set(["parameters", "voice_settings"]);

/** `value` without any string, at any depth (a free-form object's texts); numbers, booleans and nulls stay. */
export function withoutStrings(value: unknown): unknown {
  if (typeof value === "string") return undefined;
  if (Array.isArray(value)) return value.map(withoutStrings).filter((v) => v !== undefined);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const kept = withoutStrings(v);
      if (kept !== undefined) out[k] = kept;
    }
    return out;
  }
  return value;
}

/**
 * A request object the gateway knows (a stored speech, music or sound-effect call, a job's request) without
 * its texts: the {@link TEXT_FIELDS} removed, free-form fields emptied of strings, every other field kept.
 * Anything but an object is returned as it is.
 */
export function withoutTexts<T>(request: T): T {
  if (request === null || typeof request !== "object" || Array.isArray(request)) return request;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(request)) {
    if (TEXT_FIELDS.has(k)) continue;
    out[k] = FREE_FORM_FIELDS.has(k) ? withoutStrings(v) : v;
  }
  return out as T;
}
