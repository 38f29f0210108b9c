/**
 * `POST /v1/audio/music` and `POST /v1/audio/sfx` (spec sections of the same names): audio bytes with the
 * `X-Svc-*` headers, or with `?save_to_blob=1` the JSON form `audio.generation`.
 */
import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import type { AudioOutcome } from "../../audio/generate.ts";
import { createMusic } from "../../audio/music.ts";
import { createSfx } from "../../audio/sfx.ts";
import { microsToUsd } from "../../billing/money.ts";
import { errors } from "../../errors.ts";
import { blobUrl } from "../../jobs/outputs.ts";
import type { Services } from "../../services.ts";
import type { App } from "../app.ts";
import { guardOf, principalOf } from "../auth.ts";
import { roundedSeconds, setCostHeaders } from "../cost-headers.ts";
import { abortOnClose, simulateHeader } from "./speech.ts";

const Query = Type.Object({ save_to_blob: Type.Optional(Type.String({ maxLength: 10 })) });
const AnyBody = Type.Record(Type.String(), Type.Unknown());

/** `save_to_blob`: `1`/`true` stores the output; absent, `0` or `false` does not. */
function saveToBlobOf(value: string | undefined): boolean {
  if (value === undefined || value === "0" || value === "false") return false;
  if (value === "1" || value === "true") return true;
  throw errors.invalidRequest("save_to_blob must be 1 or 0.", "save_to_blob");
}

export function generationRoutes(app: App, services: Services): void {
  const deps = { db: services.db.kysely, blobs: services.blobs, adapter: services.media };
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

  app.post("/v1/audio/music", { schema: { querystring: Query, body: AnyBody } }, async (req, reply) => {
    const out = await createMusic(deps, principalOf(req), req.body ?? {}, {
      simulate: simulateHeader(req.headers["x-svc-simulate"]),
      saveToBlob: saveToBlobOf(req.query.save_to_blob),
      signal: abortOnClose(reply),
      guard: guardOf(services, req),
    });
    return send(out, reply);
  });

  app.post("/v1/audio/sfx", { schema: { querystring: Query, body: AnyBody } }, async (req, reply) => {
    const out = await createSfx(deps, principalOf(req), req.body ?? {}, {
      simulate: simulateHeader(req.headers["x-svc-simulate"]),
      saveToBlob: saveToBlobOf(req.query.save_to_blob),
      signal: abortOnClose(reply),
      guard: guardOf(services, req),
    });
    return send(out, reply);
  });
}
