/**
 * `POST /v1/audio/transcriptions` (multipart `file` up to 25 MB, or JSON `audio_url`; OpenAI-compatible
 * answer `{text}`) and `POST /v1/audio/understand` (multipart `file` and `prompt`; answer
 * `{text, model, duration_sec}`), D23.
 */
import multipart from "@fastify/multipart";
import type { FastifyReply, FastifyRequest } from "fastify";
import { errors } from "../../errors.ts";
import type { Services } from "../../services.ts";
import { type AudioSource, MAX_UPLOAD_BYTES, runAudioText } from "../../text/audio-text.ts";
import { MODEL_CALL, principalOf } from "../auth.ts";
import { audioOf, callContext } from "../call-context.ts";
import { roundedSeconds, setCostHeaders } from "../cost-headers.ts";
import { readMultipart } from "../multipart.ts";
import { createTranscriptionSchema, understandAudioSchema } from "../schemas/audio.ts";
import { formReadByRoute } from "../schemas/common.ts";
import type { App } from "../types.ts";

interface Form {
  source: AudioSource | null;
  fields: Record<string, string>;
}

/** The fields of a JSON body: an object's own fields, none for anything else. */
function jsonFields(body: unknown): Record<string, unknown> {
  return typeof body === "object" && body !== null ? { ...body } : {};
}

async function readForm(req: FastifyRequest, allowUrl: boolean): Promise<Form> {
  const form: Form = { source: null, fields: {} };
  if (req.isMultipart()) {
    const read = await readMultipart(req, {
      fileField: "file",
      unexpectedFile: (name) => errors.invalidRequest("Send the audio as one multipart part named 'file'.", name),
    });
    form.fields = read.fields;
    if (read.file !== null) form.source = { kind: "bytes", bytes: read.file };
  } else {
    const body = jsonFields(req.body);
    for (const [k, v] of Object.entries(body)) if (typeof v === "string") form.fields[k] = v;
    if (allowUrl && typeof body.audio_url === "string") form.source = { kind: "url", url: body.audio_url };
  }
  if (form.source === null) {
    throw errors.invalidRequest(allowUrl ? "Send the audio as the multipart part 'file' or as JSON audio_url." : "Send the audio as the multipart part 'file'.", "file");
  }
  return form;
}

/**
 * Registers the two routes on `app`. `opts.checkModel` (a dialect's rule for `model`, D48: the OpenAI
 * dialect's 404 `model_not_found`) runs on the request's `model`, JSON or multipart, once the form is read and
 * before anything is held.
 */
export async function audioTextRoutes(app: App, services: Services, opts: { checkModel?: (model: string | undefined) => void } = {}): Promise<void> {
  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 20, fieldSize: 16 * 1024, parts: 24 },
  });
  const handle = (task: "transcribe" | "understand") => async (req: FastifyRequest, reply: FastifyReply) => {
    const form = await readForm(req, task === "transcribe");
    opts.checkModel?.(form.fields.model);
    const prompt = form.fields.prompt ?? null;
    if (task === "understand" && (prompt === null || prompt.trim() === "")) throw errors.invalidRequest("prompt is required.", "prompt");
    const out = await runAudioText(
      { db: services.db.kysely, paidCalls: services.paidCalls, adapter: audioOf(services, req) },
      principalOf(req).accountId,
      { task, model: form.fields.model ?? null, prompt, source: form.source! },
      callContext(services, req, reply),
    );
    setCostHeaders(reply, out);
    if (task === "understand") return reply.send({ text: out.text, model: out.model, duration_sec: roundedSeconds(out.durationSec) });
    if (form.fields.response_format === "text") return reply.type("text/plain; charset=utf-8").send(out.text);
    if (form.fields.response_format === "verbose_json") {
      return reply.send({ task: "transcribe", language: "english", duration: out.durationSec, text: out.text, segments: [] });
    }
    return reply.send({ text: out.text });
  };
  app.post("/v1/audio/transcriptions", { schema: createTranscriptionSchema, validatorCompiler: formReadByRoute, config: MODEL_CALL }, handle("transcribe"));
  app.post("/v1/audio/understand", { schema: understandAudioSchema, validatorCompiler: formReadByRoute, config: MODEL_CALL }, handle("understand"));
}
