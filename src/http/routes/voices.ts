/**
 * Voice routes: the library (spec "GET /v1/audio/voices", D4), voice design (spec
 * "POST /v1/audio/voice-design") and public previews of library voices.
 */
import multipart from "@fastify/multipart";
import { cloneVoice, MAX_REFERENCE_BYTES, type VoiceCloneForm } from "../../audio/voice-clone.ts";
import { designVoice } from "../../audio/voice-design.ts";
import { microsToUsd } from "../../money.ts";
import { errors } from "../../errors.ts";
import type { Services } from "../../services.ts";
import { MODEL_CALL, principalOf } from "../auth.ts";
import { abortOnClose, audioOf, callContext, simulateHeader } from "../call-context.ts";
import { setCostHeaders } from "../cost-headers.ts";
import { readMultipart } from "../multipart.ts";
import { formReadByRoute } from "../schemas/common.ts";
import { cloneVoiceSchema, designVoiceSchema, getVoicePreviewSchema, listVoicesSchema } from "../schemas/voices.ts";
import type { App } from "../types.ts";

/** Routes that need an API key. */
export function voiceRoutes(app: App, services: Services): void {
  app.get("/v1/audio/voices", { schema: listVoicesSchema }, async (req, reply) => {
    const provider = req.query.provider ?? "alpha";
    const out = await services.voiceLibrary.list(provider, simulateHeader(req.headers["x-svc-simulate"]));
    reply.header("x-svc-cache", out.cache).header("vary", "accept-encoding").type("application/json; charset=utf-8");
    if (/\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""))) {
      return reply.header("content-encoding", "gzip").send(out.gzip);
    }
    return reply.send(out.body);
  });

  app.post("/v1/audio/voice-design", { schema: designVoiceSchema, config: MODEL_CALL }, async (req, reply) => {
    const out = await designVoice(
      { db: services.db.kysely, paidCalls: services.paidCalls, adapter: audioOf(services, req) },
      principalOf(req).accountId,
      req.body ?? {},
      callContext(services, req, reply),
    );
    return setCostHeaders(reply, out).send({
      voice_id: out.voiceId,
      name: out.name,
      model: out.model,
      cost_usd: microsToUsd(out.costMicros),
      balance_usd: microsToUsd(out.balanceMicros),
    });
  });
}

/**
 * `POST /v1/audio/voice-clone` (multipart, D5): the upload is streamed and cut off past 10 MB (413);
 * fields `file`, `name`, `model` (D20). Registered in its own scope with the multipart parser.
 */
export async function voiceCloneRoutes(app: App, services: Services): Promise<void> {
  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: MAX_REFERENCE_BYTES, files: 1, fields: 10, fieldSize: 4096, parts: 12, headerPairs: 100 },
  });
  app.post("/v1/audio/voice-clone", { schema: cloneVoiceSchema, validatorCompiler: formReadByRoute, config: MODEL_CALL }, async (req, reply) => {
    if (!req.isMultipart()) {
      throw errors.invalidRequest("Send multipart/form-data with the reference audio in the part 'file'.", "file");
    }
    const read = await readMultipart(req, {
      fileField: "file",
      unexpectedFile: (name) => errors.invalidRequest(`Unexpected file part '${name}'; send one part named 'file'.`, name),
    });
    for (const name of ["name", "model"]) {
      if (read.nonText.has(name)) throw errors.invalidRequest(`${name} must be text.`, name);
    }
    const form: VoiceCloneForm = { file: read.file, name: read.fields.name ?? null, model: read.fields.model ?? null };
    const out = await cloneVoice({ db: services.db.kysely, paidCalls: services.paidCalls, adapter: audioOf(services, req) }, principalOf(req).accountId, form, callContext(services, req, reply));
    return setCostHeaders(reply, out).send({ voice_id: out.voiceId, name: out.name, cost_usd: microsToUsd(out.costMicros), balance_usd: microsToUsd(out.balanceMicros) });
  });
}

/** Public routes: previews are played by `<audio>` tags that send no key. */
export function voicePublicRoutes(app: App, services: Services): void {
  app.get(
    "/v1/audio/voices/alpha/:voice_id/preview.mp3",
    { schema: getVoicePreviewSchema },
    async (req, reply) => {
      const bytes = await services.voicePreview(req.params.voice_id, abortOnClose(reply));
      if (bytes === null) throw errors.notFound("No such voice.");
      return reply
        .type("audio/mpeg")
        .header("cache-control", "public, max-age=86400")
        .send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    },
  );
}
