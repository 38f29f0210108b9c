/**
 * `GET /llms.txt` (D39): a short Markdown guide for AI agents, following the llms.txt convention (a title, a
 * one-line summary in a quote, then sections of links and notes). Generated from the catalog (the models
 * and their prices), the MCP tools (`tools.ts`) and the gateway's public address, so it changes when they
 * do; a test keeps it in step with the catalog.
 */
import { SIGNUP_CREDIT_MICROS } from "../../../accounts/registration.ts";
import { DEFAULT_MUSIC_MODEL, DEFAULT_SFX_MODEL, DEFAULT_SPEECH_MODEL, enabledModels } from "../../../catalog/models.ts";
import type { ModelRecord } from "../../../catalog/types.ts";
import { TEXT_MODELS } from "../../../catalog/text-models.ts";
import { formatUsd } from "../../../money.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_ALPHA_VOICES } from "../../../upstreams/simulator/voices.ts";
import { priceList, TOOLS } from "./tools.ts";

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
    `- ElevenLabs: \`new ElevenLabsClient({ baseUrl: "${base}/elevenlabs", apiKey })\` (speech, sound effects, music).`,
    `- OpenAI: \`new OpenAI({ baseURL: "${base}/openai/v1", apiKey })\` (chat, speech, transcription, images, videos); \`${base}/v1\` serves OpenAI's Videos API too.`,
    `- fal: \`fal.config({ credentials: apiKey, proxyUrl: { url: "${base}/fal/proxy", when: "always" } })\` with \`@fal-ai/client\`.`,
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
