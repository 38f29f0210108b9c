/**
 * What a paid route hands a service besides the request body: the simulator control (D10), an abort signal
 * for a client that goes away, the caller's limits (D12, D34) and the paid-call context (D29, D32). One
 * helper builds the option block every paid route used to write out by hand ({@link callContext}).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { CallContext } from "../billing/usage.ts";
import type { CallGuard } from "../limits/limiter.ts";
import type { Services } from "../services.ts";
import type { AudioRouter } from "../upstreams/audio-router.ts";
import type { SimulateMode } from "../upstreams/types.ts";
import { callOf, guardOf, principalOf } from "./auth.ts";

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

/**
 * What the speech service (`createSpeech`) needs for one request: the database, the paid-call flow, the
 * caller's audio router ({@link audioOf}) and the voice library's questions (alpha or beta voice, and which
 * sources serve each family, for the unknown-voice messages). Shared by `/v1/audio/speech` and the
 * ElevenLabs dialect (D36).
 */
export function speechDepsOf(services: Services, request: FastifyRequest) {
  const audio = audioOf(services, request);
  const library = services.voiceLibrary;
  return {
    db: services.db.kysely,
    paidCalls: services.paidCalls,
    speak: audio.speech.bind(audio),
    isAlphaVoice: (voiceId: string) => library.isAlphaVoice(voiceId),
    isBetaVoice: (voiceId: string) => library.isBetaVoice(voiceId),
    servedBy: (provider: "alpha" | "beta") => library.servedBy(provider),
    retention: services.config.retention,
  };
}

/**
 * What the music and sound-effect services (`createMusic`, `createSfx`) need for one request: the database,
 * the paid-call flow, the blob store (`save_to_blob`) and the caller's audio router. Shared by
 * `/v1/audio/music`, `/v1/audio/sfx` and the ElevenLabs dialect (D36).
 */
export function generationDepsOf(services: Services, request: FastifyRequest) {
  const audio = audioOf(services, request);
  return {
    db: services.db.kysely,
    paidCalls: services.paidCalls,
    blobs: services.blobs,
    retention: services.config.retention,
    music: audio.music.bind(audio),
    sfx: audio.sfx.bind(audio),
  };
}

/** The options of a paid call that need no reply: simulator control, the caller's limits and its call context. */
export interface PaidCallOptions {
  /** `X-Svc-Simulate` (D10), or null. */
  simulate: SimulateMode | null;
  /** The caller's limits: the key's model allow-list (D34), per-model windows and audio pool slots (D12). */
  guard: CallGuard;
  /** The request id, the key and its mode (D29, D32). */
  call: CallContext;
}

/** {@link PaidCallOptions} plus a signal that aborts when the client goes away before the answer is complete. */
export interface CallOptions extends PaidCallOptions {
  signal: AbortSignal;
}

/**
 * The paid-call options of a request behind `requireAuth` without an abort signal (chat, which watches
 * its own stream). @throws AppError 401 `auth_error` when the request has no principal.
 */
export function paidCallOf(services: Services, req: FastifyRequest): PaidCallOptions {
  return { simulate: simulateHeader(req.headers["x-svc-simulate"]), guard: guardOf(services, req), call: callOf(req) };
}

/**
 * The option block of a paid route (`{ simulate, signal, guard, call }`), passed as it is to the audio,
 * voice and audio-text services. @throws AppError 401 `auth_error` when the request has no principal.
 */
export function callContext(services: Services, req: FastifyRequest, reply: FastifyReply): CallOptions {
  return {
    simulate: simulateHeader(req.headers["x-svc-simulate"]),
    signal: abortOnClose(reply),
    guard: guardOf(services, req),
    call: callOf(req),
  };
}
