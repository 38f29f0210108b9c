/**
 * `GET /llms.txt` (D39): a short Markdown guide for AI agents, following the llms.txt convention (a title, a
 * one-line summary in a quote, then sections of links and notes). Generated from the catalog (the models
 * and their prices), the MCP tools (`tools.ts`), the vendor dialects (`vendor-dialects.ts`, which also
 * makes the MCP resource `gateway://dialects`) and the gateway's public address, so it changes when they
 * do; a test keeps it in step with the catalog. The realtime sockets (D42, D43) are listed with their
 * `ws://` URLs: agents that build voice pipelines need them, and MCP has no streaming audio.
 */
import { SIGNUP_CREDIT_MICROS } from "../../../accounts/registration.ts";
import { DEFAULT_MUSIC_MODEL, DEFAULT_SFX_MODEL, DEFAULT_SPEECH_MODEL, enabledModels } from "../../../catalog/models.ts";
import type { ModelRecord } from "../../../catalog/types.ts";
import { TEXT_MODELS } from "../../../catalog/text-models.ts";
import { formatUsd } from "../../../money.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_ALPHA_VOICES } from "../../../upstreams/simulator/voices.ts";
import { priceList, TOOLS } from "./tools.ts";
import { dialectListItems } from "./vendor-dialects.ts";

/**
 * The voice of the speech example: ElevenLabs' "George", whose real id is also in the simulator's alpha
 * library, so the example works on the simulator, on the fakes and on ElevenLabs.
 */
const EXAMPLE_VOICE_ID = DEMO_ALPHA_VOICES.find((v) => v.name === "George")?.voice_id ?? DEMO_ALPHA_VOICE_ID;

/** The catalog ids of the enabled models of `capability`. */
function idsOf(capability: ModelRecord["capability"]): string[] {
  return enabledModels()
    .filter((m) => m.capability === capability)
    .map((m) => m.id);
}

/** A `curl` example of a JSON call to `path` on `base`. */
function curl(base: string, path: string, body: Record<string, unknown>, extra = ""): string {
  return ["```sh", `curl -s ${base}${path} -H "Authorization: Bearer $GATEWAY_KEY" -H "Content-Type: application/json" \\`, `  -d '${JSON.stringify(body)}'${extra}`, "```"].join("\n");
}

/**
 * The guide, with every URL on `publicBaseUrl` (the gateway's public address, `PUBLIC_BASE_URL`). Pure: the
 * same catalog and address give the same text.
 */
export function buildLlmsTxt(publicBaseUrl: string): string {
  const base = publicBaseUrl.replace(/\/+$/, "");
  const firstOf = (cap: ModelRecord["capability"]) => idsOf(cap)[0] ?? "";
  const video = idsOf("video");
  const textModels = TEXT_MODELS.filter((m) => m.enabled).map((m) => m.id);
  // The realtime sockets (D42, D43): the same address with ws:// (wss:// behind TLS).
  const socketBase = base.replace(/^http/, "ws");
  const realtimeSpeech = enabledModels()
    .filter((m) => m.capability === "speech" && m.supportsRealtime)
    .map((m) => m.id);
  const realtimeTranscription = enabledModels()
    .flatMap((m) => (m.capability === "transcription" && m.pricing.mode === "per-minute" ? [`${m.id} ${formatUsd(m.pricing.microsPerMinute)} USD per minute (${formatUsd(Math.ceil(m.pricing.microsPerMinute / 60))} USD per second)`] : []))
    .join("; ");
  const lines = [
    "# Media Gateway",
    "",
    "> A paid HTTP API for generative media (speech, music, sound effects, voices, images, video) and chat, in front of several providers, billed to the micro-dollar from a prepaid USD balance. Every call says what it cost.",
    "",
    "## Authenticate",
    "",
    `- Create an account: \`POST ${base}/v1/auth/register\` with \`{"email", "password"}\`; the answer holds an API key (\`gw_...\`). New accounts get ${formatUsd(SIGNUP_CREDIT_MICROS)} USD of signup credit; the operator adds deposits, or \`POST /v1/billing/checkout\` opens a card payment when payments are on.`,
    "- Send the key on every call: `Authorization: Bearer <API key>`. A missing or wrong key answers 401 with `{\"error\": {\"code\": \"auth_error\", ...}}`.",
    '- Test-mode keys (`POST /v1/auth/keys {"name": "ci", "mode": "test"}`, `gw_test_...`) are served by the built-in simulator and priced as usual, but move no money.',
    "- Every paid answer carries `X-Svc-Cost-USD` (what this call cost) and `X-Svc-Balance-USD` (the balance after it); errors never charge. Too low a balance answers 402.",
    "",
    "## Main endpoints",
    "",
    `### Speech: \`POST /v1/audio/speech\` (answers MP3 bytes)`,
    "",
    `Prices: ${priceList("speech")}. Voices: \`GET /v1/audio/voices?provider=alpha|beta\`.`,
    "",
    curl(base, "/v1/audio/speech", { model: DEFAULT_SPEECH_MODEL, input: "Hello from the gateway.", voice_id: EXAMPLE_VOICE_ID }, " -o hello.mp3"),
    "",
    `### Realtime speech and transcription (WebSockets)`,
    "",
    `For text that arrives over time (a voice agent, a language model's answer), open the speech socket: \`${socketBase}/v1/audio/speech/{voice_id}/stream-input\` (ElevenLabs' text-to-speech socket protocol; \`multi-stream-input\` for up to 5 contexts). Send \`{"text": " "}\`, then \`{"text": "words ", "flush": true}\` as text comes, then \`{"text": ""}\`; the answers are \`{"audio": "<base64>", "alignment": {...}}\` and \`{"isFinal": true}\`. Query: \`model_id\` (speech models with \`"realtime": true\` in \`GET /v1/models\`: ${realtimeSpeech.join(", ")}), \`output_format\`, \`inactivity_timeout\`, \`auto_mode\`. Billed per character spoken, at the prices above.`,
    "",
    `For live audio, the transcription socket: \`${socketBase}/v1/audio/transcriptions/realtime\` (ElevenLabs' Scribe realtime protocol; query \`audio_format\` such as \`pcm_16000\`, \`commit_strategy\` \`manual\` or \`vad\`). Send \`{"message_type": "input_audio_chunk", "audio_base_64": "...", "commit": false}\`; the answers are \`session_started\`, \`partial_transcript\` and \`committed_transcript\`. Billed per started second of audio received, at the per-minute price / 60: ${realtimeTranscription}.`,
    "",
    "Both take the key as `Authorization: Bearer <API key>` (or `xi-api-key`) on the upgrade request, or, from a browser, in the query `authorization=Bearer <API key>`. One socket is one paid call: one hold that grows as it is used, one usage record (`\"realtime\": true` in `GET /v1/requests`). Errors after the upgrade are a message (`{\"error\", \"message\"}` for speech, `{\"message_type\": \"<error>\", \"error\"}` for transcription) then a close: 1008 (out of funds, a bad message), 1011 (the upstream failed), 1000 (the end, inactivity, the session time limit).",
    "",
    `### Music: \`POST /v1/audio/music\``,
    "",
    `Prices: ${priceList("music")}. Add \`?save_to_blob=1\` for a JSON answer with a stored file's URL.`,
    "",
    curl(base, "/v1/audio/music", { model: DEFAULT_MUSIC_MODEL, prompt: "calm lo-fi piano", music_length_ms: 10000 }, " -o music.mp3"),
    "",
    `### Sound effects: \`POST /v1/audio/sfx\``,
    "",
    `Price: ${priceList("sfx")}.`,
    "",
    curl(base, "/v1/audio/sfx", { model: DEFAULT_SFX_MODEL, prompt: "a door creaking open" }, " -o door.mp3"),
    "",
    `### Images: \`POST /v1/images/generations\` (an asynchronous job)`,
    "",
    `Prices: ${priceList("image")}. The answer is a job (\`job_...\`): poll \`GET /v1/jobs/{id}\` (or send \`Prefer: wait=60\`) until \`status\` is \`succeeded\`; \`output.url\` is the image. The price is held at submit and charged only on success.`,
    "",
    curl(base, "/v1/images/generations", { model: firstOf("image"), prompt: "a lighthouse at dusk, oil painting" }),
    "",
    `### Video: \`POST /v1/videos/generations\` (an asynchronous job; tier 1 and up)`,
    "",
    `Prices: ${priceList("video")}. Jobs take minutes: poll \`GET /v1/jobs/{id}\` every 10 to 30 s, follow \`GET /v1/jobs/{id}/events\`, or give a \`webhook_url\`; \`POST /v1/jobs/{id}/cancel\` gives the hold back.`,
    "",
    curl(base, "/v1/videos/generations", { model: video[0] ?? "", prompt: "waves rolling onto a beach at sunset", duration: 5 }),
    "",
    `### Chat: \`POST /v1/chat/completions\` (OpenAI format) and \`POST /v1/messages\` (Anthropic format)`,
    "",
    `Models: ${textModels.join(", ")}; prices per million tokens in \`GET /v1/pricing\`.`,
    "",
    "## Vendor dialects (their official SDKs work unchanged)",
    "",
    ...dialectListItems(base),
    "",
    "## MCP server",
    "",
    `Connect an MCP client to \`${base}/mcp\` (Streamable HTTP, stateless) with the header \`Authorization: Bearer <API key>\`. Tool calls are billed exactly as the native calls; every result's \`structuredContent\` carries \`cost_usd\`, \`balance_usd\` and \`request_id\` or \`job_id\`, and a refusal is a result with \`isError: true\` and the gateway's error code (nothing charged). Tools:`,
    "",
    ...TOOLS.map((t) => `- \`${t.name}\`: ${t.title}.`),
    "",
    "## Reference",
    "",
    `- [OpenAPI document](${base}/openapi.json): every endpoint, field and error code.`,
    `- [API docs](${base}/docs): the same, browsable.`,
    `- [Prices](${base}/v1/pricing) and [rate-limit tiers](${base}/v1/limits/tiers): public JSON.`,
    `- [Models](${base}/v1/models) (with a key): the live model list, with each model's lifecycle.`,
    "",
  ];
  return lines.join("\n");
}
