/**
 * Everything a running gateway holds: configuration, database, blob store, upstream adapters and the
 * job runner. Built once by `main.ts` (or by a test) and handed to the HTTP app; nothing reads globals.
 */
import pino from "pino";
import { VoiceLibrary } from "./audio/voice-library.ts";
import { getTextModel, type TextModel } from "./catalog/text-models.ts";
import { type Config, DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS, longestSyncCallS, SYNC_HOLD_MARGIN_S } from "./config.ts";
import { JobRunner, type OutputFetcher, type RunnerOptions } from "./jobs/runner.ts";
import type { SweepConfig } from "./jobs/sweep.ts";
import type { SourceSlot } from "./jobs/durable.ts";
import { type HostResolver, systemResolver } from "./jobs/validate.ts";
import { Limiter } from "./limits/limiter.ts";
import { type LimitStore, MemoryLimitStore, RedisLimitStore } from "./limits/store.ts";
import { type BlobStore, openBlobStore } from "./storage/blobs.ts";
import { type Db, migrate, openDatabase } from "./storage/db.ts";
import { buildFallbackPlan, type FallbackStep, type ModelSource } from "./text/fallback.ts";
import type { ChatAdapter } from "./upstreams/chat-types.ts";
import { createOpenAICompatibleChat } from "./upstreams/openai-compatible/chat.ts";
import { createSimulatedChat } from "./upstreams/simulator/chat.ts";
import { loadUpstreams, TEXT_FAMILIES, UpstreamsConfigError, type UpstreamSource } from "./upstreams/config.ts";
import { UpstreamRegistry } from "./upstreams/registry.ts";
import { AudioRouter, type RealAudioSource } from "./upstreams/audio-router.ts";
import { createBflSource } from "./upstreams/bfl/source.ts";
import { createFalSource } from "./upstreams/fal/source.ts";
import { createOpenAIImagesSource } from "./upstreams/openai-compatible/images-source.ts";
import { createOpenAIAudioSource } from "./upstreams/openai-compatible/audio.ts";
import { createElevenLabsSource } from "./upstreams/elevenlabs/source.ts";
import { createMiniMaxSource } from "./upstreams/minimax/source.ts";
import { createMiniMaxVideoSource } from "./upstreams/minimax/video-source.ts";
import { getImageModel, getVideoModel, MODELS } from "./catalog/models.ts";
import { safeFetch } from "./upstreams/safe-fetch.ts";
import { createSimulatedMediaUpstream } from "./upstreams/simulator/media.ts";
import { createSimulatedAudioUpstream } from "./upstreams/simulator/speech.ts";
import { createSimulatedVisualUpstream } from "./upstreams/simulator/visual.ts";
import { SimulatedVoiceCreation } from "./upstreams/simulator/voice-creation.ts";
import { SimulatedAudioText } from "./upstreams/simulator/audio-text.ts";
import type {
  VisualAdapter,
  VisualJobSourceAdapter,
} from "./upstreams/types.ts";
import { AppError } from "./errors.ts";
import { getJob, type JobStarter } from "./jobs/jobs.ts";
import { PaidCalls } from "./billing/paid-call.ts";
import { BalanceEvents } from "./billing/balance-events.ts";
import { configureAuthCache } from "./accounts/accounts.ts";
import { createTopups, type Topups } from "./accounts/topups.ts";

/** How long a shutdown waits for running paid calls to settle their holds before closing the database, ms. */
const SHUTDOWN_DRAIN_MS = 10_000;
import { BalanceAlerts } from "./webhooks/balance-alerts.ts";
import { WebhookDeliveryLoop } from "./webhooks/delivery.ts";
import type { WebhookUrlPolicy } from "./webhooks/urls.ts";

/** The source name of the simulated chat upstream in fallback plans (parenthesized, unlike upstream names). */
const SIMULATOR_SOURCE = "(simulator)";

export interface Services {
  config: Config;
  db: Db;
  /** Process-wide logger (the HTTP app has its own request logger). */
  log: pino.Logger;
  /** Resolves reference-image hosts at job submit (the system resolver; tests inject one). */
  resolveHost: HostResolver;
  /** The cached voice library served by `GET /v1/audio/voices`. */
  voiceLibrary: VoiceLibrary;
  /** A short MP3 sample of an alpha library voice, or null when the id is not an alpha voice. */
  voicePreview(voiceId: string, signal?: AbortSignal): Promise<Uint8Array | null>;
  /**
   * Every synchronous audio call (speech, music, sound effects, voice design and cloning, the voice
   * library, transcription, understanding) on its family's sources with failover (D25, D27), or on the
   * simulator when the family has none.
   */
  audio: AudioRouter;
  /** Image and video generation. */
  visual: VisualAdapter;
  /** Blob storage of generated outputs (`STORAGE_URL`). */
  blobs: BlobStore;
  /** Tier limits: request windows and audio pools (memory, or Redis with `REDIS_URL`). */
  limiter: Limiter;
  /** Stripe Checkout top-ups (D33), or null without `STRIPE_SECRET_KEY` (the payment routes answer 404). */
  payments: Topups | null;
  /**
   * The fallback plan of a text model (`buildFallbackPlan`: layer 0 its first source, 1 its other
   * sources, 2 and 3 its first two equivalent models). Sources are the OpenAI-compatible upstreams
   * configured for the model's family (`TEXT_UPSTREAMS`), else the simulator; with `testMode` (a
   * test-mode key, D32) always the simulator.
   */
  chatPlanFor(model: TextModel, opts?: { testMode?: boolean }): FallbackStep[];
  /**
   * The real upstream sources (`UPSTREAMS` then `TEXT_UPSTREAMS`, D25) with their circuits, concurrency
   * gates and statistics (D27); `GET /v1/admin/upstreams` shows its snapshot.
   */
  upstreams: UpstreamRegistry;
  /**
   * The sweep's thresholds, seconds: `SWEEP_*_AFTER_S`; the sync-hold one, unless set, covers the chat
   * fallback chain of every text source (`TEXT_UPSTREAMS` and `UPSTREAMS`).
   */
  sweep: SweepConfig;
  /** The webhook URL rule (D31): `WEBHOOK_ALLOW_PRIVATE` and the host resolver. */
  webhookUrlPolicy: WebhookUrlPolicy;
  /** Low-balance alerts (D34): checked after ledger writes, swept with the runner. */
  alerts: BalanceAlerts;
  /** This gateway's paid calls: their open holds (drained by close) and the balance events of their holds. */
  paidCalls: PaidCalls;
  /**
   * The configured image or video source named `name` (D25), or undefined: what a job's upstream handle
   * names, to withdraw the request there when the job is canceled (D28, D30).
   */
  jobSourceNamed(name: string): SourceSlot | undefined;
  /** Starts this process's job runner (and sweep) and its webhook delivery loop (D31). */
  startRunner(opts?: RunnerOptions): JobRunner;
  /** Tells this process's webhook delivery loop, if any, that a delivery is due now (a replay). */
  nudgeWebhooks(): void;
  /** Tells the runner of this process, if any, that a job was submitted and left pending. */
  nudgeRunner(): void;
  /** The runner of this process as a submit may start a job on it at once, or null when none runs. */
  jobStarter(): JobStarter | null;
  /** Stops the runner (handing claimed jobs back), then releases connections and workers. */
  close(): Promise<void>;
}

/** Test seams: replace an adapter or the output downloader (fake upstreams on loopback). */
export interface ServiceOverrides {
  visual?: VisualAdapter;
  /** Replaces the simulated chat upstream (tests). */
  chatSimulator?: ChatAdapter;
  /** Namespace of Redis keys (tests isolate themselves on a shared Redis). */
  redisPrefix?: string;
  fetchOutput?: OutputFetcher;
  /** Replaces the resolver of reference-image hosts (tests: no dependence on the machine's DNS). */
  resolveHost?: HostResolver;
  /** The real sources of a job's family, in failover order (tests with loopback fakes; D25, D27). */
  jobSources?: {
    sourcesFor: (job: { kind: "image" | "video"; model: string }) => SourceSlot[];
    sourceNamed: (name: string) => SourceSlot | undefined;
    /** Releases the sources' connection pools. */
    close?: () => Promise<void>;
  };
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
 */
function visualJobSources(upstreams: UpstreamRegistry): NonNullable<ServiceOverrides["jobSources"]> {
  const slots = new Map<string, SourceSlot>();
  const closers: (() => Promise<void>)[] = [];
  for (const state of upstreams.states) {
    const cfg = state.source;
    const factory = JOB_SOURCE_FACTORIES[cfg.protocol];
    if (factory === undefined || !cfg.families.some((f) => JOB_FAMILIES.has(f))) continue;
    let source: VisualJobSourceAdapter;
    try {
      source = factory(cfg);
    } catch (err) {
      // A value only the protocol can judge (a `models` endpoint id, a trusted host): name the entry (D25).
      if (err instanceof RangeError) throw new UpstreamsConfigError(`${cfg.origin} entry "${cfg.name}" (protocol ${cfg.protocol}): ${err.message}`);
      throw err;
    }
    slots.set(cfg.name, {
      name: cfg.name,
      source,
      tryAcquire: () => state.gate.tryAcquire(),
      release: () => state.gate.release(),
      call: (fn) => upstreams.call(state, fn),
      downloadsDirectly: (url) => source.isDirectDownloadHost(url),
    });
    closers.push(() => source.close());
  }
  const familyOf = (kind: "image" | "video", model: string) => (kind === "image" ? getImageModel(model) : getVideoModel(model))?.family ?? null;
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
 * factories (issue "Real upstreams, part 2"): elevenlabs for alpha, minimax for beta, openai for
 * transcribe and understand.
 */
const AUDIO_SOURCE_FACTORIES: Partial<Record<UpstreamSource["protocol"], { families: readonly string[]; create: AudioSourceFactory }>> = {
  elevenlabs: { families: ["alpha"], create: (cfg) => createElevenLabsSource(sourceSettings(cfg)) },
  minimax: { families: ["beta"], create: (cfg) => createMiniMaxSource(sourceSettings(cfg)) },
  openai: { families: ["transcribe", "understand"], create: (cfg) => createOpenAIAudioSource(sourceSettings(cfg)) },
};

/**
 * The configured audio sources (D25) by name: each entry of a protocol in {@link AUDIO_SOURCE_FACTORIES}
 * that names one of its audio families. The audio router walks them per family in file order (D27).
 * @throws UpstreamsConfigError naming the entry when the protocol rejects a value.
 */
function audioSources(upstreams: UpstreamRegistry): Map<string, RealAudioSource> {
  const out = new Map<string, RealAudioSource>();
  for (const state of upstreams.states) {
    const cfg = state.source;
    const factory = AUDIO_SOURCE_FACTORIES[cfg.protocol];
    if (factory === undefined || !cfg.families.some((f) => factory.families.includes(f))) continue;
    try {
      out.set(cfg.name, factory.create(cfg));
    } catch (err) {
      if (err instanceof RangeError) throw new UpstreamsConfigError(`${cfg.origin} entry "${cfg.name}" (protocol ${cfg.protocol}): ${err.message}`);
      throw err;
    }
  }
  return out;
}

/**
 * The longest time one audio call may take on its failover chain, seconds: per family, the timeouts of
 * its real sources added up (a source without `timeout_s` counts its protocol's longest default, music's
 * 300 s). 0 without real audio sources.
 */
function longestAudioChainS(upstreams: UpstreamRegistry, sources: ReadonlyMap<string, RealAudioSource>): number {
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

/** The longest default timeout of an audio protocol call (music generation), ms. */
const AUDIO_LONGEST_DEFAULT_TIMEOUT_MS = 300_000;

/**
 * Opens the database, applies migrations and creates the blob store and the upstream adapters. Throws
 * `UpstreamsConfigError` (upstreams/config.ts) first, before opening anything, when `UPSTREAMS` is invalid.
 */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  // First: an invalid UPSTREAMS (D25) stops the start before anything is opened.
  const upstreams = new UpstreamRegistry(loadUpstreams(config));
  const jobSources = overrides.jobSources ?? visualJobSources(upstreams);
  const realAudioSources = audioSources(upstreams);
  const log = pino({ level: config.logLevel });
  configureAuthCache(config.authCacheMs);
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize, preparedStatements: config.databasePreparedStatements });
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  const blobs = openBlobStore(config.storageUrl, config.s3);
  const media = createSimulatedMediaUpstream({ latencyScale: config.simLatencyScale });
  const simulatedVisual = createSimulatedVisualUpstream({ latencyScale: config.simLatencyScale, images: config.simImages });
  const visual = overrides.visual ?? simulatedVisual;
  const simulator = createSimulatedAudioUpstream({
    latencyScale: config.simLatencyScale,
    publicBaseUrl: config.publicBaseUrl,
  });
  const audio = new AudioRouter(
    upstreams,
    {
      speech: simulator,
      media,
      voices: simulator,
      voiceCreation: new SimulatedVoiceCreation(config.simLatencyScale),
      audioText: new SimulatedAudioText(config.simLatencyScale),
    },
    realAudioSources,
  );
  const fetchOutput: OutputFetcher =
    overrides.fetchOutput ?? (async (url, o) => safeFetch(url, { maxBytes: o.maxBytes, timeoutMs: o.timeoutMs }));
  let runner: JobRunner | null = null;
  const chatSimulator = overrides.chatSimulator ?? createSimulatedChat({ latencyScale: config.simLatencyScale });
  // Text sources (D25): the `openai` entries of UPSTREAMS that name a text family, then TEXT_UPSTREAMS (the
  // registry merged them in that order, under the names the fallback plan always used).
  const textUpstreams = upstreams.states
    .map((state) => state.source)
    .filter((src) => src.protocol === "openai" && src.families.some((f) => TEXT_FAMILIES.includes(f)))
    .map((src) => ({
      source: src.name,
      families: src.families,
      models: src.models,
      adapter: createOpenAICompatibleChat({ name: src.name, baseUrl: src.baseUrl, apiKey: src.apiKey, timeoutMs: src.timeoutMs ?? DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS }),
      timeoutMs: src.timeoutMs ?? DEFAULT_TEXT_UPSTREAM_TIMEOUT_MS,
    }));
  // The sync-hold sweep waits past the longest chat or audio failover chain unless the operator set its delay.
  const sweep: SweepConfig = {
    sweepImageAfterS: config.sweepImageAfterS,
    sweepVideoAfterS: config.sweepVideoAfterS,
    sweepSyncHoldsAfterS: config.sweepSyncHoldsAfterSSet
      ? config.sweepSyncHoldsAfterS
      : Math.max(config.sweepSyncHoldsAfterS, Math.max(longestSyncCallS(textUpstreams), longestAudioChainS(upstreams, realAudioSources)) + SYNC_HOLD_MARGIN_S),
  };
  const chatAdapters = new Map<string, ChatAdapter>([
    [SIMULATOR_SOURCE, chatSimulator],
    ...textUpstreams.map((u) => [u.source, u.adapter] as const),
  ]);
  const sourcesOf = (m: TextModel, testMode: boolean): ModelSource[] => {
    const own = testMode ? [] : textUpstreams.filter((u) => u.families.includes(m.family));
    if (own.length === 0) return [{ source: SIMULATOR_SOURCE, upstreamModel: m.upstreamModel }];
    return own.map((u) => ({ source: u.source, upstreamModel: u.models[m.id] ?? m.upstreamModel }));
  };
  const chatPlanFor = (model: TextModel, opts: { testMode?: boolean } = {}): FallbackStep[] =>
    buildFallbackPlan(
      {
        model: model.id,
        sources: sourcesOf(model, opts.testMode === true),
        equivalents: model.equivalents
          .map((id) => getTextModel(id))
          .filter((m): m is TextModel => m !== undefined)
          .map((m) => ({ model: m.id, sources: sourcesOf(m, opts.testMode === true) })),
      },
      (source) => chatAdapters.get(source),
    );
  // ioredis is loaded only with REDIS_URL: a single-process gateway never pays its memory.
  const limitStore: LimitStore = config.redisUrl
    ? new RedisLimitStore(
        new (await import("ioredis")).Redis(config.redisUrl, {
          // Fail fast when Redis is down: the limiter applies LIMITS_ON_STORE_ERROR instead of queueing.
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          connectTimeout: 2000,
          lazyConnect: false,
          // Commands of concurrent requests issued in the same event-loop turn go out in one write.
          enableAutoPipelining: true,
        }).on("error", () => {}),
        overrides.redisPrefix ?? config.redisPrefix,
      )
    : new MemoryLimitStore();
  const limiter = new Limiter(limitStore, config.limitsOnStoreError, log);
  const resolveHost = overrides.resolveHost ?? systemResolver;
  // Webhook deliveries (D31) go out from every process that runs jobs: the outbox is shared.
  const webhooks = new WebhookDeliveryLoop({
    db: db.kysely,
    dialect: db.dialect,
    log,
    renderJob: async (accountId, jobId) =>
      getJob(db.kysely, config.publicBaseUrl, accountId, jobId).catch((err: unknown) => {
        if (err instanceof AppError && err.status === 404) return null;
        throw err;
      }),
    allowPrivate: config.webhookAllowPrivate,
    retryScheduleS: config.webhookRetryScheduleS,
  });
  // D34: a balance falling below an alert threshold writes `balance.low` into the outbox; send it now.
  const alerts = new BalanceAlerts(db.kysely, log);
  alerts.onFired = () => webhooks.nudge();
  const balanceEvents = new BalanceEvents();
  balanceEvents.on((accountId) => alerts.touch(accountId));
  const paidCalls = new PaidCalls(balanceEvents);
  return {
    alerts,
    paidCalls,
    resolveHost,
    webhookUrlPolicy: { allowPrivate: config.webhookAllowPrivate, resolve: resolveHost },
    config,
    db,
    log,
    audio,
    voiceLibrary: new VoiceLibrary(audio.library),
    voicePreview: async (voiceId, signal) =>
      audio.simulatedAlphaLibrary && simulator.isAlphaVoice(voiceId) ? simulator.voicePreview(voiceId, signal) : null,
    visual,
    blobs,
    limiter,
    payments: await createTopups(db.kysely, config.payments, config.publicBaseUrl),
    chatPlanFor,
    upstreams,
    sweep,
    jobSourceNamed: (name) => jobSources.sourceNamed(name),
    startRunner(opts) {
      runner ??= new JobRunner(
        {
          db: db.kysely,
          blobs,
          visual,
          fetchOutput,
          sourcesFor: jobSources.sourcesFor,
          sourceNamed: jobSources.sourceNamed,
          sweep,
          log,
        },
        { leaseMs: config.jobLeaseS * 1000, ...opts },
      );
      runner.start();
      webhooks.start();
      alerts.start();
      return runner;
    },
    nudgeWebhooks() {
      webhooks.nudge();
    },
    nudgeRunner() {
      runner?.nudge();
    },
    jobStarter() {
      return runner;
    },
    async close() {
      // Paid calls still running (their callers may have hung up) settle before the database closes.
      await paidCalls.drain(SHUTDOWN_DRAIN_MS);
      await runner?.stop();
      await alerts.stop();
      await webhooks.stop();
      await simulator.close();
      await media.close();
      await audio.close();
      await simulatedVisual.close();
      await limitStore.close();
      for (const u of textUpstreams) await u.adapter.close();
      await jobSources.close?.();
      await db.close();
    },
  };
}
