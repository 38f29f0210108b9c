/**
 * The ElevenLabs dialect (D36): `/elevenlabs/*` routes that take ElevenLabs' requests, as
 * `@elevenlabs/elevenlabs-js` sends them, translate them to the native services (the same paid-call flow
 * as `POST /v1/audio/speech`: hold, charge or release, usage record, limits, test mode) and answer in
 * ElevenLabs' shapes. Registered as its own scope (prefix `/elevenlabs`) with its own auth hook (the key
 * in `xi-api-key` or `Authorization: Bearer`), error handler (`{"detail": {"status", "message"}}`, 422 in
 * FastAPI's shape for a request failing the schema) and not-found handler; the native routes are unchanged.
 */
import { Readable } from "node:stream";
import type { Static } from "typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { getAccount } from "../../../accounts/accounts.ts";
import type { AudioOutcome } from "../../../audio/generate.ts";
import { createMusic } from "../../../audio/music.ts";
import { createSfx } from "../../../audio/sfx.ts";
import { createSpeech, type SpeechBody } from "../../../audio/speech.ts";
import { DEFAULT_SPEECH_MODEL, enabledModels, getModel } from "../../../catalog/models.ts";
import { charactersBilledInMonth } from "../../../billing/usage-report.ts";
import { tierRow } from "../../../catalog/tiers.ts";
import type { SpeechModel } from "../../../catalog/types.ts";
import type { MusicRequestBody, SfxRequestBody } from "../../../contracts/audio.ts";
import { AppError, errors } from "../../../errors.ts";
import { formatUsd } from "../../../money.ts";
import type { Services } from "../../../services.ts";
import type { AudioFormat } from "../../../upstreams/types.ts";
import { bearerOf, MODEL_CALL, principalOf, requireAuth } from "../../auth.ts";
import { callContext, generationDepsOf, simulateHeader, speechDepsOf } from "../../call-context.ts";
import { setCostHeaders } from "../../cost-headers.ts";
import {
  type EL_SPEECH_BODY,
  elGetVoiceSchema,
  elListVoicesSchema,
  elModelsSchema,
  elMusicSchema,
  elSearchVoicesSchema,
  elSoundSchema,
  elSpeechSchema,
  elSpeechStreamSchema,
  elSubscriptionSchema,
  elUserSchema,
} from "./schemas.ts";
import { elevenLabsErrorHandler } from "./errors.ts";
import { catalogModelOf, elevenLabsIdOf } from "./models.ts";
import { DEFAULT_VOICE_SETTINGS, searchVoices, voiceOf, voicesOf } from "./voices.ts";
import type { App } from "../../types.ts";

/** The key of a dialect request: `xi-api-key` (what the SDK sends), else `Authorization: Bearer` / `x-api-key`. */
export function xiKeyOf(request: FastifyRequest): string | null {
  const xi = request.headers["xi-api-key"];
  if (typeof xi === "string" && xi.length > 0) return xi;
  return bearerOf(request);
}

/**
 * The dialect's voice-creation paths (D36) and the methods registered on them: ElevenLabs' instant voice
 * cloning (`POST /v1/voices/add`, the SDK's `voices.ivc.create`; `GET /v1/voices/add` stays the voice route's
 * "no such voice") and voice design (`/v1/text-to-voice` and everything under it, any method).
 */
const UNSUPPORTED_ROUTES = [
  { url: "/v1/voices/add", methods: ["POST", "PUT", "PATCH", "DELETE"], native: "POST /v1/audio/voice-clone" },
  { url: "/v1/text-to-voice", methods: ["GET", "POST", "PUT", "PATCH", "DELETE"], native: "POST /v1/audio/voice-design" },
  { url: "/v1/text-to-voice/*", methods: ["GET", "POST", "PUT", "PATCH", "DELETE"], native: "POST /v1/audio/voice-design" },
] as const;

/**
 * The native route that creates what the dialect's voice-creation path `path` (with the `/elevenlabs`
 * prefix, no query) would (D36): `POST /v1/audio/voice-clone` for `/elevenlabs/v1/voices/add`,
 * `POST /v1/audio/voice-design` for `/elevenlabs/v1/text-to-voice` and the paths under it; null for any other
 * path. For the not-found handler: a method {@link UNSUPPORTED_ROUTES} does not register (OPTIONS, ...).
 */
function nativeVoiceRouteOf(path: string): string | null {
  if (path === "/elevenlabs/v1/voices/add") return UNSUPPORTED_ROUTES[0].native;
  if (path === "/elevenlabs/v1/text-to-voice" || path.startsWith("/elevenlabs/v1/text-to-voice/")) return UNSUPPORTED_ROUTES[1].native;
  return null;
}

/**
 * The answer to a voice-creation route of ElevenLabs (D36): 404 `endpoint_not_supported`, naming the
 * native route (`native`, e.g. `POST /v1/audio/voice-clone`); the error handler renders it as
 * `{"detail": {"status": "endpoint_not_supported", "message"}}`.
 */
function endpointNotSupported(method: string, path: string, native: string): AppError {
  return new AppError(404, "endpoint_not_supported", `${method} ${path} is not served by the ElevenLabs dialect: voices are created on the gateway's native route, ${native}.`);
}

/**
 * The account as ElevenLabs' `Subscription` (D36): `tier` the tier's name, `character_count` the characters
 * billed this UTC calendar month (billing/usage-report.ts `charactersBilledInMonth`), `character_limit` what
 * the balance buys at the default speech model's price.
 * @throws AppError 401 `auth_error` for an account that is gone.
 */
async function subscriptionOf(services: Services, accountId: string) {
  const account = await getAccount(services.db.kysely, accountId);
  if (!account) throw errors.auth();
  const model = getModel(DEFAULT_SPEECH_MODEL) as SpeechModel;
  const perKchar = model.pricing.mode === "per-char" ? model.pricing.microsPerKchar : 0;
  const balance = Math.max(0, account.balanceMicros);
  return {
    account,
    subscription: {
      tier: tierRow(account.tier).name,
      character_count: await charactersBilledInMonth(services.db.kysely, accountId),
      character_limit: perKchar > 0 ? Math.floor((balance * 1000) / perKchar) : 0,
      max_credit_limit_extension: 0,
      can_extend_character_limit: false,
      allowed_to_extend_character_limit: false,
      voice_slots_used: 0,
      professional_voice_slots_used: 0,
      professional_voice_slots_used_in_workspace: 0,
      voice_limit: 0,
      voice_add_edit_counter: 0,
      professional_voice_limit: 0,
      can_extend_voice_limit: false,
      can_use_instant_voice_cloning: false,
      can_use_professional_voice_cloning: false,
      current_overage: { amount: "0", currency: "usd" },
      status: "active",
      open_invoices: [],
      has_open_invoices: false,
    },
  };
}

/** The dialect's text-to-speech body, as its schema types it. */
type ElSpeechBody = Static<typeof EL_SPEECH_BODY>;

/** The routes of the dialect, registered under the prefix `/elevenlabs` (see the module comment). */
export async function elevenLabsRoutes(app: App, services: Services): Promise<void> {
  app.setErrorHandler(elevenLabsErrorHandler);
  app.addHook("onRequest", requireAuth(services, { allowSession: false, secretOf: xiKeyOf }));
  app.setNotFoundHandler((request) => {
    const path = request.url.split("?")[0] ?? "";
    // Another method on a voice-creation path (OPTIONS, ...): the same answer as its routes below.
    const native = nativeVoiceRouteOf(path);
    if (native !== null) throw endpointNotSupported(request.method, path, native);
    throw errors.notFound(`No route ${request.method} ${path}.`);
  });

  // Voice creation stays on the native routes (its voices are beta voices, D36). These paths are routes of
  // their own, refused in the route's `onRequest` hook: after the scope's auth, before Fastify reads or
  // parses the body (a not-found handler runs the parsers first, so a multipart upload, the SDK's
  // `voices.ivc.create`, answered 400 "not valid JSON"). Whatever the body, nothing of it is read or held:
  // Node discards its bytes as they arrive, and the connection stays usable.
  for (const { url, methods, native } of UNSUPPORTED_ROUTES) {
    const refuse = async (request: FastifyRequest): Promise<never> => {
      throw endpointNotSupported(request.method, request.url.split("?")[0] ?? "", native);
    };
    app.route({ method: [...methods], url, schema: { hide: true }, onRequest: refuse, handler: refuse });
  }

  /** Answers a text-to-speech request (`stream`: the streaming route) with the audio and ElevenLabs' headers. */
  const speak = async (req: FastifyRequest, reply: FastifyReply, voiceId: string, format: AudioFormat | undefined, body: ElSpeechBody, stream: boolean) => {
    const s = body.voice_settings;
    const native: SpeechBody = {
      model: catalogModelOf(body.model_id ?? "eleven_multilingual_v2") as SpeechBody["model"],
      text: body.text,
      voice_id: voiceId,
      ...(format ? { response_format: format } : {}),
      ...(s
        ? {
            voice_settings: {
              ...(s.stability !== undefined ? { stability: s.stability } : {}),
              ...(s.similarity_boost !== undefined ? { similarity_boost: s.similarity_boost } : {}),
              ...(s.style !== undefined ? { style: s.style } : {}),
              ...(s.use_speaker_boost !== undefined ? { use_speaker_boost: s.use_speaker_boost } : {}),
            },
          }
        : {}),
      stream,
    };
    const out = await createSpeech(speechDepsOf(services, req), principalOf(req).accountId, native, callContext(services, req, reply));
    setCostHeaders(reply.header("content-type", out.contentType), out)
      .header("request-id", req.id)
      .header("character-cost", String(out.charsBilled));
    if (out.audio.kind === "bytes") return reply.send(Buffer.from(out.audio.body.buffer, out.audio.body.byteOffset, out.audio.body.byteLength));
    return reply.send(Readable.from(out.audio.chunks, { objectMode: false }));
  };
  app.post("/v1/text-to-speech/:voice_id", { schema: elSpeechSchema, config: MODEL_CALL }, (req, reply) =>
    speak(req, reply, req.params.voice_id, req.query.output_format, req.body, false),
  );
  app.post("/v1/text-to-speech/:voice_id/stream", { schema: elSpeechStreamSchema, config: MODEL_CALL }, (req, reply) =>
    speak(req, reply, req.params.voice_id, req.query.output_format, req.body, true),
  );

  const sendAudio = (out: AudioOutcome, req: FastifyRequest, reply: FastifyReply) =>
    setCostHeaders(reply, out)
      .header("request-id", req.id)
      .type(out.contentType)
      .send(Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength));
  const formatOf = (format: AudioFormat | undefined) => (format ? { response_format: format } : {});

  app.post("/v1/sound-generation", { schema: elSoundSchema, config: MODEL_CALL }, async (req, reply) => {
    const body = req.body;
    const native: SfxRequestBody = {
      model: catalogModelOf(body.model_id ?? "eleven_text_to_sound_v2") as SfxRequestBody["model"],
      prompt: body.text,
      ...(body.duration_seconds !== undefined ? { duration_seconds: body.duration_seconds } : {}),
      ...(body.prompt_influence !== undefined ? { prompt_influence: body.prompt_influence } : {}),
      ...formatOf(req.query.output_format),
    };
    const out = await createSfx(generationDepsOf(services, req), principalOf(req), native, { ...callContext(services, req, reply), saveToBlob: false });
    return sendAudio(out, req, reply);
  });

  app.post("/v1/music", { schema: elMusicSchema, config: MODEL_CALL }, async (req, reply) => {
    const body = req.body;
    const native: MusicRequestBody = {
      model: catalogModelOf(body.model_id ?? "music_v2") as MusicRequestBody["model"],
      prompt: body.prompt,
      ...(body.music_length_ms !== undefined ? { music_length_ms: body.music_length_ms } : {}),
      ...formatOf(req.query.output_format),
    };
    const out = await createMusic(generationDepsOf(services, req), principalOf(req), native, { ...callContext(services, req, reply), saveToBlob: false });
    return sendAudio(out, req, reply);
  });

  app.get("/v1/models", { schema: elModelsSchema }, async () =>
    enabledModels()
      .filter((m): m is SpeechModel => m.capability === "speech" && (m as SpeechModel).voiceProvider === "alpha")
      .map((m) => ({
        model_id: elevenLabsIdOf(m.id),
        name: m.name,
        can_be_finetuned: false,
        can_do_text_to_speech: true,
        can_do_voice_conversion: false,
        can_use_style: true,
        can_use_speaker_boost: true,
        serves_pro_voices: false,
        token_cost_factor: 1,
        description: `The gateway's ${m.id}: ${m.pricing.mode === "per-char" ? `${formatUsd(m.pricing.microsPerKchar)} USD per 1000 characters` : "see GET /v1/pricing"}.`,
        requires_alpha_access: false,
        max_characters_request_free_user: m.maxInputChars,
        max_characters_request_subscribed_user: m.maxInputChars,
        maximum_text_length_per_request: m.maxInputChars,
        languages: [{ language_id: "en", name: "English" }],
        concurrency_group: "standard",
      })),
  );

  app.get("/v1/user/subscription", { schema: elSubscriptionSchema }, async (req) => (await subscriptionOf(services, principalOf(req).accountId)).subscription);

  app.get("/v1/user", { schema: elUserSchema }, async (req) => {
    const principal = principalOf(req);
    const { account, subscription } = await subscriptionOf(services, principal.accountId);
    return {
      // The member behind the key (its creator, D41), in the organization that is the workspace.
      user_id: principal.userId ?? account.id,
      workspace_id: account.id,
      subscription,
      is_new_user: false,
      can_use_delayed_payment_methods: false,
      is_onboarding_completed: true,
      is_onboarding_checklist_completed: true,
      created_at: Math.floor(account.createdAt / 1000),
      seat_type: "workspace_admin",
    };
  });

  const simulateOf = (req: FastifyRequest) => simulateHeader(req.headers["x-svc-simulate"]);
  app.get("/v1/voices", { schema: elListVoicesSchema }, async (req) => ({ voices: await voicesOf(services, principalOf(req).accountId, simulateOf(req)) }));
  app.get("/v2/voices", { schema: elSearchVoicesSchema }, async (req) => searchVoices(services, principalOf(req).accountId, req.query, simulateOf(req)));
  app.get("/v1/voices/:voice_id", { schema: elGetVoiceSchema }, async (req) => {
    const { voice_id } = req.params;
    const { with_settings } = req.query;
    const voice = await voiceOf(services, principalOf(req).accountId, voice_id, simulateOf(req));
    return with_settings === "true" ? { ...voice, settings: DEFAULT_VOICE_SETTINGS } : voice;
  });
}
