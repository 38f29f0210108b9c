/**
 * The vendor dialects (D36, D37, D38, D47) as the agents' guides describe them: one list, rendered as the
 * "Vendor dialects" lines of `GET /llms.txt` (llms-txt.ts) and as the MCP resource `gateway://dialects`
 * (routes.ts), so that the two never say different things. Each entry is a vendor whose official client
 * runs through the gateway with its base URL and key changed: where that base URL is on this gateway, the
 * client's setup, what the dialect serves. Built from the gateway's public address and the catalog.
 */
import { enabledModels } from "../../../catalog/models.ts";
import { PROVIDER_NAMES } from "../replicate/models.ts";

/** One vendor dialect as the guides show it. Every string is Markdown. */
export interface VendorDialect {
  /** The vendor (`ElevenLabs`, `OpenAI`, `fal`, `Replicate`). */
  name: string;
  /** The client's base URL on this gateway (`<PUBLIC_BASE_URL>/replicate/v1`, ...). */
  baseUrl: string;
  /** The npm package of the vendor's official client. */
  pkg: string;
  /** The client's import, one line of TypeScript. */
  importLine: string;
  /** The client's construction, one line of TypeScript; `apiKey` stands for the gateway API key. */
  setup: string;
  /** What the dialect serves (a phrase, no final period). */
  serves: string;
  /** What else to know (sockets, another base URL), whole sentences; empty when nothing. */
  notes: string;
}

/** The first enabled catalog model of `capability`, or an empty string. */
function firstOf(capability: "image" | "video"): string {
  return enabledModels().find((m) => m.capability === capability)?.id ?? "";
}

/**
 * The vendor dialects, with every URL on `publicBaseUrl` (the gateway's public address; a trailing slash
 * is dropped). Pure: the same catalog and address give the same list. Order: ElevenLabs, OpenAI, fal,
 * Replicate.
 */
export function vendorDialects(publicBaseUrl: string): VendorDialect[] {
  const base = publicBaseUrl.replace(/\/+$/, "");
  // The realtime sockets (D42, D43): the same address with ws:// (wss:// behind TLS).
  const socketBase = base.replace(/^http/, "ws");
  const image = firstOf("image");
  const providerName = PROVIDER_NAMES.find((p) => p.catalogId === firstOf("video"))?.ref ?? PROVIDER_NAMES[0]?.ref ?? "";
  return [
    {
      name: "ElevenLabs",
      baseUrl: `${base}/elevenlabs`,
      pkg: "@elevenlabs/elevenlabs-js",
      importLine: 'import { ElevenLabsClient } from "@elevenlabs/elevenlabs-js";',
      setup: `const el = new ElevenLabsClient({ baseUrl: "${base}/elevenlabs", apiKey });`,
      serves: "speech, sound effects, music, voices, models; ElevenLabs model ids such as `eleven_multilingual_v2`",
      notes: `Its sockets are at \`${socketBase}/elevenlabs/v1/text-to-speech/{voice_id}/stream-input\` (and \`multi-stream-input\`; LiveKit's ElevenLabs plugin with \`baseURL: "${base}/elevenlabs/v1"\`) and \`${socketBase}/elevenlabs/v1/speech-to-text/realtime\` (\`speechToText.realtime.connect\` of the SDK).`,
    },
    {
      name: "OpenAI",
      baseUrl: `${base}/openai/v1`,
      pkg: "openai",
      importLine: 'import OpenAI from "openai";',
      setup: `const openai = new OpenAI({ baseURL: "${base}/openai/v1", apiKey });`,
      serves: "chat, speech (also OpenAI's names `tts-1`, `alloy`, ...), transcription, images (answered synchronously), videos (OpenAI's Videos API), models",
      notes: `\`${base}/v1\` serves the same without the synchronous images and OpenAI's speech names.`,
    },
    {
      name: "fal",
      baseUrl: `${base}/fal/proxy`,
      pkg: "@fal-ai/client",
      importLine: 'import { createFalClient } from "@fal-ai/client";',
      setup: `const fal = createFalClient({ credentials: apiKey, proxyUrl: { url: "${base}/fal/proxy", when: "always" } });`,
      serves: "image and video endpoints by their fal ids (`queue.submit`, `subscribe`, `run`); each call is a gateway job",
      notes: "Only URL inputs: the client's uploads to fal's storage are refused. Poll every 2 s or more on the low tiers (`pollInterval: 2000`).",
    },
    {
      name: "Replicate",
      baseUrl: `${base}/replicate/v1`,
      pkg: "replicate",
      importLine: 'import Replicate from "replicate";',
      setup: `const replicate = new Replicate({ auth: apiKey, baseUrl: "${base}/replicate/v1" });`,
      serves: `\`run\`, predictions (create, get, list, cancel; \`Prefer: wait\`, \`Cancel-After\`, webhooks that \`validateWebhook\` accepts), models and their versions, \`files.create\`: every catalog image, video, speech, music and sound-effect model as \`gateway/<catalog id>\` (such as \`gateway/${image}\`), and the providers' own Replicate names (such as \`${providerName}\`)`,
      notes: `\`GET ${base}/replicate/v1/models\` lists the names with their input schemas. Images and videos are jobs (held at submit, charged on success); speech, music and sound effects answer at once with the stored file's URL.`,
    },
  ];
}

/** The dialects as the Markdown list items of `GET /llms.txt`'s "Vendor dialects" section. */
export function dialectListItems(publicBaseUrl: string): string[] {
  return vendorDialects(publicBaseUrl).map((d) => `- ${d.name}: \`${d.setup}\` with \`${d.pkg}\` (${d.serves}).${d.notes === "" ? "" : ` ${d.notes}`}`);
}

/**
 * The MCP resource `gateway://dialects` (text/markdown): a title, then one section per dialect with its
 * base URL, the client's package, the two-line setup in a code block, what it serves and the notes.
 */
export function buildDialectsGuide(publicBaseUrl: string): string {
  const lines = [
    "# Vendor dialects",
    "",
    "The vendors' official clients run through this gateway unchanged: give them the base URL below and a gateway API key (`apiKey`). Every call is billed from the prepaid balance exactly as the native call it becomes.",
  ];
  for (const d of vendorDialects(publicBaseUrl)) {
    lines.push("", `## ${d.name}`, "", `Base URL: \`${d.baseUrl}\` (npm \`${d.pkg}\`).`, "", "```ts", d.importLine, d.setup, "```", "", `Serves: ${d.serves}.`);
    if (d.notes !== "") lines.push("", d.notes);
  }
  lines.push("");
  return lines.join("\n");
}
