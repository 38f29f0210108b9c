/**
 * Deterministic voice catalogs of the simulated audio providers (decision D10, spec "GET /v1/audio/voices").
 *
 * Alpha: exactly {@link ALPHA_VOICE_COUNT} voices with opaque 20-character alphanumeric ids, human
 * names, a category, filter labels, a preview URL and a free-text description. Beta: exactly
 * {@link BETA_VOICE_COUNT} system voices with readable ids `beta_<name>_<n>` and tag descriptions
 * `[energy, language, gender]`. The same inputs always give the same catalogs; the first records of
 * each list are fixed demo voices (see {@link DEMO_ALPHA_VOICES} and {@link DEMO_BETA_VOICES}). Demo voices
 * that carry a real provider id (ElevenLabs' "George" `JBFqnCBsd6RMkjVDRZzb` and the premade voices the
 * OpenAI dialect's voice names stand for, MiniMax's `English_Graceful_Lady`) make the README's calls work as
 * written on the simulator, on the loopback fakes (`npm run fake-upstreams`) and on the providers.
 */

import type { VoiceRecord } from "../types.ts";
import { createRng, type Rng } from "./rng.ts";

/** Number of voices in the alpha library. */
export const ALPHA_VOICE_COUNT = 3000;
/** Number of system voices in the beta library. */
export const BETA_VOICE_COUNT = 300;

/** An alpha library record. */
export type AlphaVoiceRecord = Extract<VoiceRecord, { provider: "alpha" }>;
/** A beta library record. */
export type BetaVoiceRecord = Extract<VoiceRecord, { provider: "beta" }>;

/** The fixed alpha demo voices; they open the alpha list in this order. */
export const DEMO_ALPHA_VOICES = [
  {
    voice_id: "pNx4Lq8TzR2vWk7HdM3s",
    name: "Rachel",
    category: "premade",
    labels: { gender: "female", age: "young", accent: "american", use_case: "narration" },
    description: "Calm, clear narrator with a warm tone.",
  },
  {
    voice_id: "Gk2WmT9bVq4XnR7sLp1D",
    name: "Daniel",
    category: "premade",
    labels: { gender: "male", age: "middle_aged", accent: "british", use_case: "news" },
    description: "Deep, authoritative newsreader.",
  },
  {
    voice_id: "Zc8HfJ3yUe6KaQ1wPo5M",
    name: "Charlotte",
    category: "premade",
    labels: { gender: "female", age: "middle_aged", accent: "australian", use_case: "conversational" },
    description: "Friendly and relaxed, good for assistants.",
  },
  {
    voice_id: "Tb5RnY2iOs9LdE4gWc7V",
    name: "Marcus",
    category: "professional",
    labels: { gender: "male", age: "old", accent: "american", use_case: "audiobook" },
    description: "Gravelly storyteller with a slow pace.",
  },
  // ElevenLabs' own default voice "George", with its real id (the id of the ElevenLabs SDK's examples and
  // the gateway README's): the same call then works on the simulator, on the ElevenLabs fake and on
  // ElevenLabs itself.
  {
    voice_id: "JBFqnCBsd6RMkjVDRZzb",
    name: "George",
    category: "premade",
    labels: { gender: "male", age: "middle_aged", accent: "british", use_case: "narration" },
    description: "Warm, captivating British storyteller.",
  },
  // More of ElevenLabs' default (premade) voices, with their real ids: the voices OpenAI's voice names stand
  // for in the OpenAI dialect (src/http/dialects/openai/speech.ts), so `voice: "alloy"` speaks on the
  // simulator, on the ElevenLabs fake and on ElevenLabs alike.
  { voice_id: "SAz9YHcvj6GT2YYXdXww", name: "River", category: "premade", labels: { gender: "neutral", age: "middle_aged", accent: "american", use_case: "conversational" }, description: "Relaxed, even and neutral." },
  { voice_id: "TX3LPaxmHKxFdv7VOQHJ", name: "Liam", category: "premade", labels: { gender: "male", age: "young", accent: "american", use_case: "social_media" }, description: "Bright, articulate young voice." },
  { voice_id: "N2lVS1w4EtoT3dr4eOWO", name: "Callum", category: "premade", labels: { gender: "male", age: "middle_aged", accent: "american", use_case: "characters" }, description: "Husky, intense character voice." },
  { voice_id: "cgSgspJ2msm6clMCkdW9", name: "Jessica", category: "premade", labels: { gender: "female", age: "young", accent: "american", use_case: "conversational" }, description: "Playful, warm and expressive." },
  { voice_id: "cjVigY5qzO86Huf0OWal", name: "Eric", category: "premade", labels: { gender: "male", age: "middle_aged", accent: "american", use_case: "conversational" }, description: "Smooth, calm and trustworthy." },
  { voice_id: "FGY2WhTYpPnrIDTdsKH5", name: "Laura", category: "premade", labels: { gender: "female", age: "young", accent: "american", use_case: "social_media" }, description: "Upbeat and enthusiastic." },
  { voice_id: "nPczCjzI2devNBz1zQrb", name: "Brian", category: "premade", labels: { gender: "male", age: "middle_aged", accent: "american", use_case: "narration" }, description: "Deep, resonant narrator." },
  { voice_id: "XrExE9yKIg1WjnnlVkGX", name: "Matilda", category: "premade", labels: { gender: "female", age: "middle_aged", accent: "american", use_case: "educational" }, description: "Knowledgeable, professional and calm." },
  { voice_id: "EXAVITQu4vr4xnSDxMaL", name: "Sarah", category: "premade", labels: { gender: "female", age: "young", accent: "american", use_case: "news" }, description: "Soft, confident and reassuring." },
  { voice_id: "bIHbv24MWmeRgasZH58o", name: "Will", category: "premade", labels: { gender: "male", age: "young", accent: "american", use_case: "conversational" }, description: "Relaxed and friendly." },
  { voice_id: "pFZP5JQG7iQjIQuC4Bku", name: "Lily", category: "premade", labels: { gender: "female", age: "middle_aged", accent: "british", use_case: "narration" }, description: "Velvety British narrator." },
  { voice_id: "iP95p4xoKVk53GoZ742B", name: "Chris", category: "premade", labels: { gender: "male", age: "middle_aged", accent: "american", use_case: "conversational" }, description: "Casual, down-to-earth." },
] as const;

/** The alpha demo voice used by tests and docs (first record of the alpha list). */
export const DEMO_ALPHA_VOICE_ID: string = DEMO_ALPHA_VOICES[0].voice_id;

/** The fixed beta demo voices; they open the beta list in this order. */
export const DEMO_BETA_VOICES = [
  { voice_id: "beta_aria_1", name: "Aria", description: ["warm", "english", "female"] },
  { voice_id: "beta_leo_1", name: "Leo", description: ["energetic", "english", "male"] },
  { voice_id: "beta_sofia_1", name: "Sofia", description: ["calm", "spanish", "female"] },
  { voice_id: "beta_kai_1", name: "Kai", description: ["bright", "japanese", "neutral"] },
  // MiniMax's own system voice "Graceful Lady", with its real id: the same beta call then works on the
  // simulator, on the MiniMax fake and on MiniMax itself (the gateway README's beta example).
  { voice_id: "English_Graceful_Lady", name: "Graceful Lady", description: ["calm", "english", "female"] },
] as const;

/** The beta demo voice used by tests and docs (first record of the beta list). */
export const DEMO_BETA_VOICE_ID: string = DEMO_BETA_VOICES[0].voice_id;

/** Splits a space-separated word list (compact data tables). */
function words(list: string): readonly string[] {
  return list.split(" ");
}

const FEMALE_NAMES = words(
  "Rachel Charlotte Emily Grace Olivia Sophia Amelia Isabella Mia Harper Evelyn Abigail Ella " +
    "Scarlett Chloe Lily Hannah Zoe Nora Layla Aurora Hazel Violet Stella Lucy Paisley Anna " +
    "Caroline Genesis Naomi Elena Maya Sarah Alice Claire Julia Freya Matilda Ivy Ruby Esther " +
    "Priya Aisha Mei Yuki Ingrid Greta Camille Lucia Valentina Fatima Amara Nadia Leila Sienna " +
    "Bianca Rosa Helen Margaret Dorothy Joan Beatrice Imogen Harriet Siobhan Aoife Maeve Kiara " +
    "Tamsin Elodie",
);

const MALE_NAMES = words(
  "Daniel Marcus James Oliver Liam Noah Ethan Lucas Henry Jack Samuel David Joseph Thomas " +
    "Charles George Arthur Frederick Harry Oscar Leo Adam Ryan Nathan Aaron Isaac Caleb Owen " +
    "Callum Finn Rohan Arjun Kenji Hiroshi Mateo Diego Luca Matteo Pierre Hans Lars Sven Dmitri " +
    "Ivan Omar Karim Kwame Tunde Chen Wei Patrick Declan Angus Hamish Bruce Clyde Walter Harold " +
    "Bernard Rupert Felix Jasper Miles Rafael Santiago Tobias Elliot Gideon Reuben Silas",
);

const NEUTRAL_NAMES = words("Alex Jordan Taylor Morgan Riley Casey Quinn Avery Sage Robin");

const SURNAMES = words(
  "Hayes Brooks Carter Foster Reed Morgan Bennett Hughes Price Ward Sullivan Patel Nakamura " +
    "Okafor Lindqvist Moreau Rossi Garcia Kowalski Novak Fitzgerald Campbell Singh Tanaka " +
    "Ibrahim Mensah Silva Becker Dubois Kim",
);

const AGES = words("young young middle_aged middle_aged old");
const ACCENTS = words(
  "american american american british british australian irish scottish indian canadian " +
    "south_african nigerian jamaican new_zealand swedish german french italian spanish mexican " +
    "brazilian polish russian japanese chinese korean arabic turkish dutch filipino",
);
const USE_CASES = words(
  "narration conversational news characters audiobook meditation social_media advertisement " +
    "animation video_games educational podcast asmr customer_service",
);
const TONES = words(
  "Calm Warm Bright Deep Soft Crisp Raspy Smooth Energetic Gentle Confident Playful Husky " +
    "Clear Mellow Lively Steady Breathy Rich Friendly",
);
const USE_PHRASES: Record<string, string> = {
  narration: "narration",
  conversational: "conversation",
  news: "news reading",
  characters: "character work",
  audiobook: "audiobooks",
  meditation: "meditation",
  social_media: "social media",
  advertisement: "ads",
  animation: "animation",
  video_games: "games",
  educational: "lessons",
  podcast: "podcasts",
  asmr: "ASMR",
  customer_service: "support lines",
};

const BETA_FEMALE = words(
  "Aria Sofia Nova Luna Iris Ava Zara Cleo Elsa Nia Vera Lena Yara Mara Rosa Ines Alma Eva " +
    "Maya Ada Esme Hana Kira Lia Noor Pia Tess Uma Wren Zoe Amie Bea Dina Fay Gia Ida Jo Lola " +
    "Mina Oona",
);
const BETA_MALE = words(
  "Leo Ezra Milo Theo Finn Jude Remy Axel Otto Hugo Ravi Emil Ian Tariq Sami Nils Bo Jun Omar " +
    "Abe Cal Dev Eli Gus Hal Ike Jay Lev Max Ned Oli Pax Rex Sol Tom Vik Wes Yan Zed Ari",
);
const BETA_NEUTRAL = words("Kai Dara Sky Rio Ash Ren Lake Noa Sasha Eden");
const ENERGIES = words("calm warm bright energetic deep soft authoritative playful neutral");
const LANGUAGES = words(
  "english english english spanish french german italian portuguese japanese chinese korean " +
    "hindi arabic russian dutch polish turkish swedish",
);

/** Display form of an accent label: `new_zealand` -> `New Zealand`. */
function accentText(accent: string): string {
  return accent
    .split("_")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(" ");
}

const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

function pick<T>(rng: Rng, list: readonly T[]): T {
  return list[Math.floor(rng() * list.length)];
}

function alphaId(rng: Rng): string {
  let s = "";
  for (let i = 0; i < 20; i++) s += ID_ALPHABET[Math.floor(rng() * ID_ALPHABET.length)];
  return s;
}

function previewUrl(base: string, voiceId: string): string {
  return `${base}/v1/audio/voices/alpha/${voiceId}/preview.mp3`;
}

function buildAlpha(base: string): AlphaVoiceRecord[] {
  const rng = createRng("alpha-voice-catalog-v1");
  const out: AlphaVoiceRecord[] = [];
  const ids = new Set<string>();
  for (const d of DEMO_ALPHA_VOICES) {
    ids.add(d.voice_id);
    out.push({
      provider: "alpha",
      voice_id: d.voice_id,
      name: d.name,
      category: d.category,
      labels: { ...d.labels },
      preview_url: previewUrl(base, d.voice_id),
      description: d.description,
    });
  }
  while (out.length < ALPHA_VOICE_COUNT) {
    let id = alphaId(rng);
    while (ids.has(id)) id = alphaId(rng);
    ids.add(id);
    const c = rng();
    const category = c < 0.62 ? "premade" : c < 0.8 ? "professional" : c < 0.92 ? "generated" : "cloned";
    const g = rng();
    const gender = g < 0.47 ? "female" : g < 0.94 ? "male" : "neutral";
    const first = pick(
      rng,
      gender === "female" ? FEMALE_NAMES : gender === "male" ? MALE_NAMES : NEUTRAL_NAMES,
    );
    const name = category === "premade" ? first : `${first} ${pick(rng, SURNAMES)}`;
    const age = pick(rng, AGES);
    const accent = pick(rng, ACCENTS);
    const useCase = pick(rng, USE_CASES);
    const description = `${pick(rng, TONES)}, ${accentText(accent)} voice for ${USE_PHRASES[useCase]}.`;
    out.push({
      provider: "alpha",
      voice_id: id,
      name,
      category,
      labels: { gender, age, accent, use_case: useCase },
      preview_url: previewUrl(base, id),
      description,
    });
  }
  return out;
}

function buildBeta(): BetaVoiceRecord[] {
  const rng = createRng("beta-voice-catalog-v1");
  const out: BetaVoiceRecord[] = [];
  const counters = new Map<string, number>();
  for (const d of DEMO_BETA_VOICES) {
    const slug = d.name.toLowerCase();
    counters.set(slug, (counters.get(slug) ?? 0) + 1);
    out.push({ provider: "beta", voice_id: d.voice_id, name: d.name, description: [...d.description] });
  }
  while (out.length < BETA_VOICE_COUNT) {
    const g = rng();
    const gender = g < 0.45 ? "female" : g < 0.9 ? "male" : "neutral";
    const name = pick(rng, gender === "female" ? BETA_FEMALE : gender === "male" ? BETA_MALE : BETA_NEUTRAL);
    const slug = name.toLowerCase();
    const n = (counters.get(slug) ?? 0) + 1;
    counters.set(slug, n);
    out.push({
      provider: "beta",
      voice_id: `beta_${slug}_${n}`,
      name,
      description: [pick(rng, ENERGIES), pick(rng, LANGUAGES), gender],
    });
  }
  return out;
}

/** The two voice libraries plus an O(1) alpha membership test. Records are frozen; do not mutate. */
export interface VoiceCatalog {
  /** Exactly 3000 alpha records; the demo voices first. */
  alpha: readonly AlphaVoiceRecord[];
  /** Exactly 300 beta records; the demo voices first. */
  beta: readonly BetaVoiceRecord[];
  /** True when `id` is the voice_id of an alpha library voice (a Set lookup). */
  isAlphaVoice(id: string): boolean;
}

function deepFreeze<T extends object>(rec: T): T {
  for (const v of Object.values(rec)) if (v && typeof v === "object") Object.freeze(v);
  return Object.freeze(rec);
}

/**
 * Builds both catalogs, deterministically. `publicBaseUrl` (for example `https://api.example.com`,
 * trailing slashes ignored) prefixes the alpha `preview_url`s:
 * `${publicBaseUrl}/v1/audio/voices/alpha/${voice_id}/preview.mp3`. Build it once and keep it: it takes
 * a few milliseconds.
 */
export function createVoiceCatalog(publicBaseUrl: string): VoiceCatalog {
  const base = publicBaseUrl.replace(/\/+$/, "");
  const alpha = Object.freeze(buildAlpha(base).map(deepFreeze));
  const beta = Object.freeze(buildBeta().map(deepFreeze));
  const alphaIds = new Set(alpha.map((v) => v.voice_id));
  return { alpha, beta, isAlphaVoice: (id: string) => alphaIds.has(id) };
}
