/**
 * Everything a running gateway holds: configuration, database, blob store, upstream adapters and the
 * job runner. Built once by `main.ts` (or by a test) and handed to the HTTP app; nothing reads globals.
 *
 * Construction and wiring only: the upstream sources are built by upstreams/sources.ts, the chat fallback
 * plans by text/chat-plans.ts, the limit store by limits/store.ts; migrations are the caller's (main.ts).
 * State that must not be shared by two gateways of one process (the auth cache, accounts/auth-cache.ts)
 * is created here, once per {@link createServices}.
 */
import pino from "pino";
import { VoiceLibrary } from "./audio/voice-library.ts";
import type { TextModel } from "./catalog/text-models.ts";
import { configureModelLifecycle } from "./catalog/models.ts";
import { type Config, longestSyncCallS, SYNC_HOLD_MARGIN_S } from "./config.ts";
import { JobRunner, type OutputFetcher, type RunnerOptions } from "./jobs/runner.ts";
import type { SweepConfig } from "./jobs/sweep.ts";
import type { SourceSlot } from "./jobs/durable.ts";
import { type HostResolver, systemResolver } from "./jobs/validate.ts";
import { Limiter } from "./limits/limiter.ts";
import { openLimitStore } from "./limits/store.ts";
import type { BlobStore } from "./storage/blob-store.ts";
import { openBlobStore } from "./storage/blobs.ts";
import { type Db, openDatabase } from "./storage/db.ts";
import { chatPlanner } from "./text/chat-plans.ts";
import type { FallbackStep } from "./text/fallback.ts";
import type { ChatAdapter } from "./upstreams/chat-types.ts";
import { createSimulatedChat } from "./upstreams/simulator/chat.ts";
import { loadUpstreams } from "./upstreams/config.ts";
import { UpstreamRegistry } from "./upstreams/registry.ts";
import { AudioRouter } from "./upstreams/audio-router.ts";
import { audioSources, type JobSources, longestAudioChainS, textSources, visualJobSources } from "./upstreams/sources.ts";
import { safeFetch } from "./upstreams/safe-fetch.ts";
import { createSimulatedMediaUpstream } from "./upstreams/simulator/media.ts";
import { createSimulatedAudioUpstream } from "./upstreams/simulator/speech.ts";
import { createSimulatedVisualUpstream } from "./upstreams/simulator/visual.ts";
import { SimulatedVoiceCreation } from "./upstreams/simulator/voice-creation.ts";
import { SimulatedAudioText } from "./upstreams/simulator/audio-text.ts";
import { SimulatedRealtimeTranscription } from "./upstreams/simulator/realtime-transcription.ts";
import type { VisualAdapter } from "./upstreams/types.ts";
import { AppError } from "./errors.ts";
import { getJob, type JobStarter } from "./jobs/jobs.ts";
import { PaidCalls } from "./billing/paid-call.ts";
import { startLedgerWriter } from "./billing/ledger-writer.ts";
import { BalanceEvents } from "./billing/balance-events.ts";
import { AuthCache } from "./accounts/auth-cache.ts";
import { createJobChangeFeed, type JobChangeFeed } from "./jobs/changes.ts";
import { createTopups, type Topups } from "./accounts/topups.ts";
import { BalanceAlerts } from "./webhooks/balance-alerts.ts";
import { BudgetAlerts } from "./webhooks/budget-alerts.ts";
import { WebhookDeliveryLoop } from "./webhooks/delivery.ts";
import type { WebhookUrlPolicy } from "./webhooks/urls.ts";
import type { Tracing } from "./observability/tracing.ts";
import { monitorEventLoopDelay } from "./metrics.ts";
import { webhookPrediction } from "./jobs/prediction-view.ts";

/** How long a shutdown waits for running paid calls to settle their holds before closing the database, ms. */
const SHUTDOWN_DRAIN_MS = 10_000;

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
  /**
   * This gateway's authentication (D8, D34): resolves bearer secrets with its cache of resolved API keys
   * (`AUTH_CACHE_MS`); what changes an account's keys, tier or limits drops its entries here.
   */
  auth: AuthCache;
  /**
   * This gateway's feed of committed job changes (D30): its runner, sweep and cancels announce there, and
   * its event streams and `Prefer: wait` answers listen, so two gateways in one process never hear each other.
   */
  jobChanges: JobChangeFeed;
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
  /** Budget thresholds (D44): checked after ledger writes, swept with the runner. */
  budgetAlerts: BudgetAlerts;
  /** This gateway's paid calls: their open holds (drained by close) and the balance events of their holds. */
  paidCalls: PaidCalls;
  /**
   * The configured image or video source named `name` (D25), or undefined: what a job's upstream handle
   * names, to withdraw the request there when the job is canceled (D28, D30).
   */
  jobSourceNamed(name: string): SourceSlot | undefined;
  /**
   * Tracing (D40), or null when it is off (no OTLP endpoint configured): the HTTP layer's request spans use
   * it; the runner and the webhook loop continue a job's trace with it.
   */
  tracing: Tracing | null;
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
  jobSources?: JobSources;
}

/**
 * Opens the database and creates the blob store, the upstream adapters and the services over them. Throws
 * `UpstreamsConfigError` (upstreams/config.ts) first, before opening anything, when `UPSTREAMS` is invalid.
 * Applies no migrations: the caller migrates `services.db` (storage/db.ts `migrate`) before serving or
 * starting the runner (main.ts does for `serve` and `worker`, the test gateway helper for tests).
 */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  // First: an invalid MODEL_SHUTDOWN_DATES (D35) or UPSTREAMS (D25) stops the start before anything is opened.
  configureModelLifecycle(config.modelShutdownDates);
  const log = pino({ level: config.logLevel });
  // The SDK is loaded only when tracing is on (D40): off, the process never imports it.
  const tracing: Tracing | null = config.tracing === null ? null : (await import("./observability/otel.ts")).createOtelTracing(config.tracing);
  // The event-loop delay histogram of GET /metrics (one sampler per process, whatever the gateways in it).
  monitorEventLoopDelay();
  const upstreams = new UpstreamRegistry(loadUpstreams(config), { log });
  const jobSources = overrides.jobSources ?? visualJobSources(upstreams);
  const realAudioSources = audioSources(upstreams);
  const auth = new AuthCache({ ttlMs: config.authCacheMs });
  const jobChanges = createJobChangeFeed();
  const db = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize, preparedStatements: config.databasePreparedStatements });
  const ledgerWriter = config.sqliteLedgerThread && db.sqliteFile !== null ? startLedgerWriter(db.kysely, db.sqliteFile) : null;
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
      speechStream: simulator,
      transcriptionStream: new SimulatedRealtimeTranscription({ latencyScale: config.simLatencyScale }),
    },
    realAudioSources,
  );
  const fetchOutput: OutputFetcher =
    overrides.fetchOutput ?? (async (url, o) => safeFetch(url, { maxBytes: o.maxBytes, timeoutMs: o.timeoutMs }));
  let runner: JobRunner | null = null;
  const chatSimulator = overrides.chatSimulator ?? createSimulatedChat({ latencyScale: config.simLatencyScale });
  const textUpstreams = textSources(upstreams);
  // The sync-hold sweep waits past the longest chat or audio failover chain unless the operator set its delay.
  const sweep: SweepConfig = {
    sweepImageAfterS: config.sweepImageAfterS,
    sweepVideoAfterS: config.sweepVideoAfterS,
    sweepSyncHoldsAfterS: config.sweepSyncHoldsAfterSSet
      ? config.sweepSyncHoldsAfterS
      : Math.max(config.sweepSyncHoldsAfterS, Math.max(longestSyncCallS(textUpstreams), longestAudioChainS(upstreams, realAudioSources)) + SYNC_HOLD_MARGIN_S),
    sweepRealtimeAfterS: config.realtime.sweepAfterS,
  };
  const chatPlanFor = chatPlanner(textUpstreams, chatSimulator);
  const limitStore = await openLimitStore(config.redisUrl, overrides.redisPrefix ?? config.redisPrefix);
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
    renderPrediction: async (accountId, jobId, event) => webhookPrediction(db.kysely, config.publicBaseUrl, accountId, jobId, event),
    allowPrivate: config.webhookAllowPrivate,
    retryScheduleS: config.webhookRetryScheduleS,
    tracing,
  });
  // D34: a balance falling below an alert threshold writes `balance.low` into the outbox; send it now.
  const alerts = new BalanceAlerts(db.kysely, log);
  alerts.onFired = () => webhooks.nudge();
  const balanceEvents = new BalanceEvents();
  balanceEvents.on((accountId) => alerts.touch(accountId));
  // D44: a hold that crosses a budget's threshold writes `budget.threshold` into the outbox; send it now.
  const budgetAlerts = new BudgetAlerts(db.kysely, log);
  budgetAlerts.onFired = () => webhooks.nudge();
  balanceEvents.on((accountId) => budgetAlerts.touch(accountId));
  const paidCalls = new PaidCalls(balanceEvents);
  return {
    alerts,
    budgetAlerts,
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
    auth,
    jobChanges,
    payments: await createTopups(db.kysely, auth, config.payments, config.publicBaseUrl),
    chatPlanFor,
    upstreams,
    sweep,
    tracing,
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
          changes: jobChanges,
          tracing,
        },
        { leaseMs: config.jobLeaseS * 1000, ...opts },
      );
      runner.start();
      webhooks.start();
      alerts.start();
      budgetAlerts.start();
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
      await budgetAlerts.stop();
      await webhooks.stop();
      await simulator.close();
      await media.close();
      await audio.close();
      await simulatedVisual.close();
      await limitStore.close();
      for (const u of textUpstreams) await u.adapter.close();
      await jobSources.close?.();
      await ledgerWriter?.close();
      await db.close();
      // Last: the spans of the work drained above are sent before the process goes.
      await tracing?.shutdown().catch((err: unknown) => log.warn({ err: err instanceof Error ? err.message : String(err) }, "sending the last spans failed"));
    },
  };
}
