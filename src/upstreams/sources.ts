/**
 * The configured upstream sources (D25, D27) built from their `UPSTREAMS` / `TEXT_UPSTREAMS` entries: the
 * protocol factories (fal, bfl, openai, minimax, elevenlabs), and what each service takes from them: the
 * image and video sources of the job runner, the audio sources of the audio router, the text sources of
 * the chat fallback plans. `services.ts` calls these once per gateway with its {@link UpstreamRegistry}.
 *
 * A value only the protocol can judge (a `models` endpoint id, a trusted host) is rejected by the factory
 * with a RangeError; it is reported as an {@link UpstreamsConfigError} naming the entry.
 */
import { findModelOf, MODELS } from "../catalog/models.ts";
import { DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS } from "../config.ts";
import type { RealAudioSource } from "./audio-router.ts";
import { createBflSource } from "./bfl/source.ts";
import { TEXT_FAMILIES, UpstreamsConfigError, type UpstreamSource } from "./config.ts";
import { createElevenLabsSource } from "./elevenlabs/source.ts";
import { createFalSource } from "./fal/source.ts";
import { createMiniMaxSource } from "./minimax/source.ts";
import { createMiniMaxVideoSource } from "./minimax/video-source.ts";
import { createOpenAIAudioSource } from "./openai-compatible/audio.ts";
import { createOpenAICompatibleChat, type OpenAICompatibleChat } from "./openai-compatible/chat.ts";
import { createOpenAIImagesSource } from "./openai-compatible/images-source.ts";
import type { UpstreamRegistry } from "./registry.ts";
import type { VisualJobSource, VisualJobSourceAdapter } from "./types.ts";

/**
 * One configured image or video source as the job runner uses it (D25, D27): its name, the adapter, its
 * `max_concurrency` gate, its circuit and statistics (the upstream registry provides these).
 */
export interface JobSourceSlot {
  /** The source's name (`UPSTREAMS` entry `name`). */
  name: string;
  /** Its protocol and base URL, as its upstream spans name them (D40); absent for test doubles. */
  protocol?: string;
  baseUrl?: string;
  source: VisualJobSource;
  /** Takes one of the source's places; false when it is at `max_concurrency` (the source is skipped). */
  tryAcquire(): boolean;
  /** Gives a place back. */
  release(): void;
  /**
   * Runs one upstream call through the source's circuit and statistics. An open circuit throws a
   * retryable `UpstreamError` without calling `fn`.
   */
  call<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * True when an output URL is on the source's own host or its `trusted_hosts` (D25): the runner then
   * downloads it directly instead of through the SSRF-safe fetch. Absent: never.
   */
  downloadsDirectly?(url: string): boolean;
}

/** The real sources of a job's family, in failover order (D25, D27), and their release. */
export interface JobSources {
  sourcesFor: (job: { kind: "image" | "video"; model: string }) => JobSourceSlot[];
  sourceNamed: (name: string) => JobSourceSlot | undefined;
  /** Releases the sources' connection pools. */
  close?: () => Promise<void>;
}

/** A text source (D25): an `openai` entry naming a text family, with its chat adapter. */
export interface TextSource {
  /** The entry's name, the source name of fallback plans. */
  source: string;
  families: readonly string[];
  /** The upstream model id of each catalog model id the entry maps (`models`). */
  models: Readonly<Record<string, string>>;
  /** Its chat adapter (closed by the caller: it holds a connection pool). */
  adapter: OpenAICompatibleChat;
  /** The call's timeout, ms (`timeout_s`, else {@link DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS}). */
  timeoutMs: number;
}

/** What a protocol's job-source factory is given: one validated `UPSTREAMS` entry (D25). */
type JobSourceFactory = (cfg: UpstreamSource) => VisualJobSourceAdapter;

/** The common settings every job-source factory takes from an entry. */
const sourceSettings = (cfg: UpstreamSource) => ({
  name: cfg.name,
  baseUrl: cfg.baseUrl,
  apiKey: cfg.apiKey,
  ...(cfg.timeoutMs !== null ? { timeoutMs: cfg.timeoutMs } : {}),
  trustedHosts: cfg.trustedHosts,
  models: cfg.models,
});

/** `factory(cfg)`, a RangeError of the protocol reported as an {@link UpstreamsConfigError} naming the entry. */
function build<T>(cfg: UpstreamSource, factory: (cfg: UpstreamSource) => T): T {
  try {
    return factory(cfg);
  } catch (err) {
    // A value only the protocol can judge (a `models` endpoint id, a trusted host): name the entry (D25).
    if (err instanceof RangeError) throw new UpstreamsConfigError(`${cfg.origin} entry "${cfg.name}" (protocol ${cfg.protocol}): ${err.message}`);
    throw err;
  }
}

/**
 * The protocols whose sources serve image and video jobs, and their factories (issues "Real upstreams",
 * parts 1 and 2): fal, bfl, openai (imgC only) and minimax (vidC, Hailuo-02). An `elevenlabs` entry
 * serves no job.
 */
const JOB_SOURCE_FACTORIES: Partial<Record<UpstreamSource["protocol"], JobSourceFactory>> = {
  fal: (cfg) => createFalSource(sourceSettings(cfg)),
  bfl: (cfg) => createBflSource(sourceSettings(cfg)),
  openai: (cfg) => createOpenAIImagesSource(sourceSettings(cfg)),
  minimax: (cfg) => createMiniMaxVideoSource(sourceSettings(cfg)),
};

/** The families of image and video models (the job families a source may serve). */
const JOB_FAMILIES: ReadonlySet<string> = new Set(MODELS.filter((m) => m.modality === "image" || m.modality === "video").map((m) => m.family));

/**
 * The configured image and video sources (D25) as the job runner uses them (jobs/durable.ts): each entry
 * of a protocol in {@link JOB_SOURCE_FACTORIES} that serves an image or video family becomes a source; a
 * job holds a place of the source's `max_concurrency` gate for its whole life there, and each HTTP call
 * goes through the source's circuit and statistics. A family with no source gets an empty list: the
 * simulator serves it.
 * @throws UpstreamsConfigError naming the entry when the protocol rejects a value.
 */
export function visualJobSources(upstreams: UpstreamRegistry): JobSources {
  const slots = new Map<string, JobSourceSlot>();
  const closers: (() => Promise<void>)[] = [];
  for (const state of upstreams.states) {
    const cfg = state.source;
    const factory = JOB_SOURCE_FACTORIES[cfg.protocol];
    if (factory === undefined || !cfg.families.some((f) => JOB_FAMILIES.has(f))) continue;
    const source = build(cfg, factory);
    slots.set(cfg.name, {
      name: cfg.name,
      protocol: cfg.protocol,
      baseUrl: cfg.baseUrl,
      source,
      tryAcquire: () => state.gate.tryAcquire(),
      release: () => state.gate.release(),
      call: (fn) => upstreams.call(state, fn),
      downloadsDirectly: (url) => source.isDirectDownloadHost(url),
    });
    closers.push(() => source.close());
  }
  const familyOf = (kind: "image" | "video", model: string) => findModelOf(model, kind)?.family ?? null;
  return {
    sourcesFor: (job) => {
      const family = familyOf(job.kind, job.model);
      if (family === null) return [];
      return upstreams.sourcesFor(family).flatMap((s) => slots.get(s.name) ?? []);
    },
    sourceNamed: (name) => slots.get(name),
    close: async () => {
      for (const c of closers) await c();
    },
  };
}

/** What a protocol's audio-source factory is given: one validated `UPSTREAMS` entry (D25). */
type AudioSourceFactory = (cfg: UpstreamSource) => RealAudioSource;

/**
 * The protocols whose sources serve synchronous audio calls, the families they serve them for, and their
 * factories (issue "Real upstreams, part 2"): elevenlabs for alpha and transcribe (Scribe, D43),
 * minimax for beta, openai for transcribe and understand.
 */
const AUDIO_SOURCE_FACTORIES: Partial<Record<UpstreamSource["protocol"], { families: readonly string[]; create: AudioSourceFactory }>> = {
  elevenlabs: { families: ["alpha", "transcribe"], create: (cfg) => createElevenLabsSource(sourceSettings(cfg)) },
  minimax: { families: ["beta"], create: (cfg) => createMiniMaxSource(sourceSettings(cfg)) },
  openai: { families: ["transcribe", "understand"], create: (cfg) => createOpenAIAudioSource(sourceSettings(cfg)) },
};

/**
 * The configured audio sources (D25) by name: each entry of a protocol in {@link AUDIO_SOURCE_FACTORIES}
 * that names one of its audio families. The audio router walks them per family in file order (D27).
 * @throws UpstreamsConfigError naming the entry when the protocol rejects a value.
 */
export function audioSources(upstreams: UpstreamRegistry): Map<string, RealAudioSource> {
  const out = new Map<string, RealAudioSource>();
  for (const state of upstreams.states) {
    const cfg = state.source;
    const factory = AUDIO_SOURCE_FACTORIES[cfg.protocol];
    if (factory === undefined || !cfg.families.some((f) => factory.families.includes(f))) continue;
    out.set(cfg.name, build(cfg, factory.create));
  }
  return out;
}

/** The longest default timeout of an audio protocol call (music generation), ms. */
const AUDIO_LONGEST_DEFAULT_TIMEOUT_MS = 300_000;

/**
 * The longest time one audio call may take on its failover chain, seconds: per family, the timeouts of
 * its real sources added up (a source without `timeout_s` counts its protocol's longest default, music's
 * 300 s). 0 without real audio sources.
 */
export function longestAudioChainS(upstreams: UpstreamRegistry, sources: ReadonlyMap<string, RealAudioSource>): number {
  let longestMs = 0;
  for (const family of ["alpha", "beta", "transcribe", "understand"]) {
    const chainMs = upstreams
      .sourcesFor(family)
      .filter((s) => sources.has(s.name))
      .reduce((sum, s) => sum + (s.source.timeoutMs ?? AUDIO_LONGEST_DEFAULT_TIMEOUT_MS), 0);
    longestMs = Math.max(longestMs, chainMs);
  }
  return Math.ceil(longestMs / 1000);
}

/**
 * The text sources (D25): the `openai` entries of `UPSTREAMS` that name a text family, then
 * `TEXT_UPSTREAMS` (the registry merged them in that order, under the names the fallback plan always
 * used), each with its OpenAI-compatible chat adapter. The caller closes the adapters.
 */
export function textSources(upstreams: UpstreamRegistry): TextSource[] {
  return upstreams.states
    .map((state) => state.source)
    .filter((src) => src.protocol === "openai" && src.families.some((f) => TEXT_FAMILIES.includes(f)))
    .map((src) => ({
      source: src.name,
      families: src.families,
      models: src.models,
      adapter: createOpenAICompatibleChat({ name: src.name, baseUrl: src.baseUrl, apiKey: src.apiKey, timeoutMs: src.timeoutMs ?? DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS }),
      timeoutMs: src.timeoutMs ?? DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS,
    }));
}
