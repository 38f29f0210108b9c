/**
 * `POST /v1/audio/speech` (spec "POST /v1/audio/speech"): parses, calls the speech service and answers
 * raw audio with the `X-Svc-*` headers. Field types are checked here; rules with their own error codes
 * (model, input length, voice) are the service's.
 */
import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { createSpeech, type SpeechBody } from "../../audio/speech.ts";
import type { Services } from "../../services.ts";
import type { AudioRouter } from "../../upstreams/audio-router.ts";
import type { SimulateMode } from "../../upstreams/types.ts";
import type { App } from "../app.ts";
import { callOf, guardOf, principalOf } from "../auth.ts";
import { setCostHeaders } from "../cost-headers.ts";
import { createSpeechSchema } from "../schemas/audio.ts";

/** The `X-Svc-Simulate` header (D10), or null. Unknown values are ignored. */
export function simulateHeader(value: string | string[] | undefined): SimulateMode | null {
  const v = Array.isArray(value) ? value[0] : value;
  return v === "fail" || v === "hang" || v === "slow" ? v : null;
}

/** An AbortSignal that fires when the client goes away before the answer is complete. */
export function abortOnClose(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** The audio router of the caller: the simulator-only one for a test-mode key (D32). */
export function audioOf(services: Services, request: FastifyRequest): AudioRouter {
  return principalOf(request).mode === "test" ? services.audio.testMode : services.audio;
}

export function speechRoutes(app: App, services: Services): void {
  const isAlphaVoice = (voiceId: string) => services.voiceLibrary.isAlphaVoice(voiceId);
  app.post("/v1/audio/speech", { schema: createSpeechSchema }, async (req, reply) => {
    const audio = audioOf(services, req);
    const deps = { db: services.db.kysely, paidCalls: services.paidCalls, speak: audio.speech.bind(audio), isAlphaVoice };
    const out = await createSpeech(deps, principalOf(req).accountId, (req.body ?? {}) as SpeechBody, {
      simulate: simulateHeader(req.headers["x-svc-simulate"]),
      signal: abortOnClose(reply),
      guard: guardOf(services, req),
      call: callOf(req),
    });
    setCostHeaders(reply.header("content-type", out.contentType), out);
    if (out.audio.kind === "bytes")
      return reply.send(
        Buffer.from(out.audio.body.buffer, out.audio.body.byteOffset, out.audio.body.byteLength),
      );
    return reply.send(Readable.from(out.audio.chunks, { objectMode: false }));
  });
}
