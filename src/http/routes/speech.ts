/**
 * `POST /v1/audio/speech` (spec "POST /v1/audio/speech"): parses, calls the speech service and answers
 * raw audio with the `X-Svc-*` headers. Field types are checked here; rules with their own error codes
 * (model, input length, voice) are the service's.
 */
import { Readable } from "node:stream";
import { createSpeech } from "../../audio/speech.ts";
import type { Services } from "../../services.ts";
import { MODEL_CALL, principalOf } from "../auth.ts";
import { callContext, speechDepsOf } from "../call-context.ts";
import { setCostHeaders } from "../cost-headers.ts";
import { createSpeechSchema } from "../schemas/audio.ts";
import type { App } from "../types.ts";

export function speechRoutes(app: App, services: Services): void {
  app.post("/v1/audio/speech", { schema: createSpeechSchema, config: MODEL_CALL }, async (req, reply) => {
    const out = await createSpeech(speechDepsOf(services, req), principalOf(req).accountId, req.body ?? {}, callContext(services, req, reply));
    setCostHeaders(reply.header("content-type", out.contentType), out);
    if (out.audio.kind === "bytes")
      return reply.send(
        Buffer.from(out.audio.body.buffer, out.audio.body.byteOffset, out.audio.body.byteLength),
      );
    return reply.send(Readable.from(out.audio.chunks, { objectMode: false }));
  });
}
