/**
 * `POST /v1/audio/music` and `POST /v1/audio/sfx` (spec sections of the same names): audio bytes with the
 * `X-Svc-*` headers, or with `?save_to_blob=1` the JSON form `audio.generation`.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { AudioOutcome } from "../../audio/generate.ts";
import { createMusic } from "../../audio/music.ts";
import { createSfx } from "../../audio/sfx.ts";
import { microsToUsd } from "../../money.ts";
import { blobUrl } from "../../jobs/outputs.ts";
import type { Services } from "../../services.ts";
import { MODEL_CALL, principalOf } from "../auth.ts";
import { callContext, generationDepsOf } from "../call-context.ts";
import { roundedSeconds, setCostHeaders } from "../cost-headers.ts";
import { createMusicSchema, createSoundEffectSchema } from "../schemas/audio.ts";
import type { App } from "../types.ts";

/** `save_to_blob` (its values are checked by the route schema): `1`/`true` stores the output. */
function saveToBlobOf(query: unknown): boolean {
  const value = (query as { save_to_blob?: string }).save_to_blob;
  return value === "1" || value === "true";
}

export function generationRoutes(app: App, services: Services): void {
  const depsOf = (req: FastifyRequest) => generationDepsOf(services, req);
  const send = (out: AudioOutcome, reply: FastifyReply) => {
    setCostHeaders(reply, out);
    if (out.stored) {
      return reply.send({
        object: "audio.generation",
        job_id: out.stored.jobId,
        kind: "audio",
        model: out.model,
        url: blobUrl(services.config.publicBaseUrl, out.stored.key),
        duration_sec: roundedSeconds(out.durationSec),
        cost_usd: microsToUsd(out.costMicros),
        balance_usd: microsToUsd(out.balanceMicros),
      });
    }
    return reply.type(out.contentType).send(Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength));
  };

  app.post("/v1/audio/music", { schema: createMusicSchema, config: MODEL_CALL }, async (req, reply) => {
    const out = await createMusic(depsOf(req), principalOf(req), req.body ?? {}, {
      ...callContext(services, req, reply),
      saveToBlob: saveToBlobOf(req.query),
    });
    return send(out, reply);
  });

  app.post("/v1/audio/sfx", { schema: createSoundEffectSchema, config: MODEL_CALL }, async (req, reply) => {
    const out = await createSfx(depsOf(req), principalOf(req), req.body ?? {}, {
      ...callContext(services, req, reply),
      saveToBlob: saveToBlobOf(req.query),
    });
    return send(out, reply);
  });
}
