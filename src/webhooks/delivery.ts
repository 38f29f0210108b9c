/**
 * The webhook delivery loop (D31): claims due deliveries from the outbox with a lease, POSTs each event
 * signed as Standard Webhooks (the official `standardwebhooks` package signs), records every attempt
 * and schedules the next retry. Started by every gateway process next to its job runner (`serve` and
 * `worker`); several processes share the outbox safely:
 * - a claim takes a lease (`lease_until`) under a token of its own; on PostgreSQL the candidates are
 *   locked `FOR UPDATE SKIP LOCKED`, so claimers never wait on or take the same rows; SQLite has one writer;
 * - an attempt is recorded only while its claim still holds the lease (a replay in between takes it away);
 * - a process that dies (SIGKILL) mid-attempt leaves the lease to lapse, and the delivery is sent again:
 *   at least once, with the same `webhook-id` for the receiver to drop duplicates by.
 */
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import { Webhook } from "standardwebhooks";
import { newId } from "../ids.ts";
import type { Database } from "../storage/schema.ts";
import { FetchFailedError, FetchTimeoutError, safePost, UnsafeUrlError } from "../upstreams/safe-fetch.ts";
import { defaultSecret } from "./endpoints.ts";
import type { DeliveryAttempt } from "./deliveries.ts";
import { type Claimed, claimDueDeliveries, endpointSigning, eventOfDelivery, keepEventData, recordAttempt } from "./delivery.repository.ts";
import { eventBody, isPredictionEventType } from "./events.ts";
import { annotateSpan, failSpan, inTrace, traceHeaders, type Tracing } from "../observability/tracing.ts";

/** What the loop needs from the process. */
export interface DeliveryLoopDeps {
  db: Kysely<Database>;
  /** `FOR UPDATE SKIP LOCKED` is PostgreSQL's; SQLite serializes writers by itself. */
  dialect: "sqlite" | "postgres";
  log: Pick<Logger, "warn" | "debug">;
  /**
   * The job object of D3 (as `GET /v1/jobs/{id}` shows it) of the account's job, or null when it is gone.
   * Injected by services.ts: rendering a job is jobs/' business, a layer above this one.
   */
  renderJob(accountId: string, jobId: string): Promise<unknown>;
  /**
   * The prediction (D47) of the account's job as a `prediction.<event>` delivery sends it (`start`: as it
   * was created), or null when the job is gone. Injected by services.ts, as `renderJob` is.
   */
  renderPrediction(accountId: string, jobId: string, event: "start" | "output" | "completed"): Promise<unknown>;
  /** `WEBHOOK_ALLOW_PRIVATE=1`: `http://` and private addresses allowed (development, tests). */
  allowPrivate: boolean;
  /** `WEBHOOK_RETRY_SCHEDULE_S`: seconds before each retry, in order. */
  retryScheduleS: readonly number[];
  /** Tracing (D40), or null/absent when off: a job's deliveries are CLIENT spans of its submit's trace. */
  tracing?: Tracing | null;
}

/** Tuning of the loop; the defaults are D31's. */
export interface DeliveryLoopOptions {
  /** How often the outbox is looked at when idle, ms (default 500). */
  pollMs?: number;
  /** One attempt's time limit, ms (default 10 000, D31). */
  timeoutMs?: number;
  /** Deliveries claimed and sent at once (default 16). */
  batch?: number;
}

/** Attempts kept in a delivery's log (the schedule has 11 per replay; replays could add more). */
const MAX_ATTEMPTS_KEPT = 50;


/** How one attempt went. */
interface Outcome {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** No attempt was possible and none ever will be (endpoint deleted or disabled, job gone). */
  final?: boolean;
}

/** The outbox's sender; see the module comment. */
export class WebhookDeliveryLoop {
  readonly #deps: DeliveryLoopDeps;
  readonly #pollMs: number;
  readonly #timeoutMs: number;
  readonly #batch: number;
  /** A lease outlives the longest attempt by a margin, so it lapses only when its holder died. */
  readonly #leaseMs: number;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = true;
  #again = false;

  constructor(deps: DeliveryLoopDeps, opts: DeliveryLoopOptions = {}) {
    this.#deps = deps;
    this.#pollMs = opts.pollMs ?? 500;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#batch = opts.batch ?? 16;
    this.#leaseMs = this.#timeoutMs + 20_000;
  }

  /** Starts polling the outbox. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Looks at the outbox now (a replay was asked for in this process). */
  nudge(): void {
    if (this.#stopped) return;
    if (this.#running) this.#again = true;
    else this.#schedule(0);
  }

  /** Stops polling and waits for the attempts in flight (at most one attempt's timeout). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#pass().finally(() => {
        this.#running = null;
        const again = this.#again;
        this.#again = false;
        this.#schedule(again ? 0 : this.#pollMs);
      });
    }, ms);
    this.#timer.unref();
  }

  async #pass(): Promise<void> {
    try {
      for (;;) {
        const n = await this.tick();
        if (n < this.#batch || this.#stopped) return;
      }
    } catch (err) {
      // The database may be briefly unreachable: the next pass tries again; nothing is lost.
      this.#deps.log.warn({ err: err instanceof Error ? err.message : String(err) }, "webhook delivery pass failed");
    }
  }

  /** One round: claims due deliveries, attempts each, records the outcomes. Returns how many it claimed. */
  async tick(): Promise<number> {
    const token = newId("wl");
    const claimed = await this.#claim(token);
    await Promise.all(claimed.map((d) => this.#deliver(d, token)));
    return claimed.length;
  }

  async #claim(token: string): Promise<Claimed[]> {
    return claimDueDeliveries(this.#deps.db, { now: Date.now(), leaseMs: this.#leaseMs, token, limit: this.#batch, skipLocked: this.#deps.dialect === "postgres" });
  }

  async #deliver(d: Claimed, token: string): Promise<void> {
    let outcome: Outcome;
    try {
      outcome = await this.#attempt(d);
    } catch (err) {
      // A database failure while preparing: the lease lapses and the delivery is tried again later.
      this.#deps.log.warn({ delivery: d.id, err: err instanceof Error ? err.message : String(err) }, "webhook attempt could not be prepared");
      return;
    }
    await this.#record(d, token, outcome);
  }

  /** Prepares and sends one attempt. Never logs or returns the secret or the signature. */
  async #attempt(d: Claimed): Promise<Outcome> {
    const db = this.#deps.db;
    let secret: string;
    if (d.endpoint_id !== null) {
      const ep = await endpointSigning(db, d.endpoint_id);
      if (!ep) return { statusCode: null, error: "endpoint_deleted", durationMs: 0, final: true };
      if (ep.disabled) return { statusCode: null, error: "endpoint_disabled", durationMs: 0, final: true };
      secret = ep.secret;
    } else {
      secret = await defaultSecret(db, d.account_id);
    }
    const event = await eventOfDelivery(db, d.event_id);
    let dataJson = event.dataJson;
    // A prediction's own webhook (D47) is sent the prediction itself; every other event D31's envelope.
    const prediction = isPredictionEventType(event.type);
    if (dataJson === null) {
      const rendered =
        event.jobId === null
          ? null
          : prediction
            ? await this.#deps.renderPrediction(d.account_id, event.jobId, event.type.slice("prediction.".length) as "start" | "output" | "completed")
            : await this.#deps.renderJob(d.account_id, event.jobId);
      if (rendered === null) return { statusCode: null, error: "job_not_found", durationMs: 0, final: true };
      dataJson = JSON.stringify(rendered);
      // Kept, so every later attempt and replay sends the same body.
      await keepEventData(db, event.id, dataJson);
    }
    const body = prediction ? dataJson : eventBody({ id: event.id, type: event.type, createdAt: event.createdAt, dataJson });
    const sentAt = new Date();
    const headers = {
      "content-type": "application/json",
      "webhook-id": event.id,
      "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
      "webhook-signature": new Webhook(secret).sign(event.id, sentAt, body),
    };
    const started = performance.now();
    const took = () => Math.round(performance.now() - started);
    try {
      // D40: one CLIENT span per attempt, in the job's trace; the request carries its `traceparent`.
      const res = await inTrace(
        this.#deps.tracing,
        event.traceparent,
        "webhook.deliver",
        "client",
        { "gw.webhook.event_id": event.id, "gw.webhook.event_type": event.type, "gw.webhook.delivery_id": d.id, "gw.account.id": d.account_id },
        async () => {
          const answer = await safePost(d.url, body, {
            headers: traceHeaders(headers),
            timeoutMs: this.#timeoutMs,
            allowHttp: this.#deps.allowPrivate,
            allowPrivateAddresses: this.#deps.allowPrivate,
          });
          annotateSpan({ "http.response.status_code": answer.status });
          if (answer.status < 200 || answer.status > 299) failSpan(`http_${answer.status}`);
          return answer;
        },
      );
      const ok = res.status >= 200 && res.status <= 299;
      return { statusCode: res.status, error: ok ? null : `http_${res.status}`, durationMs: took() };
    } catch (err) {
      return { statusCode: null, error: describe(err), durationMs: took() };
    }
  }

  /** Writes the attempt and the delivery's next state, if this claim still holds the lease. */
  async #record(d: Claimed, token: string, o: Outcome): Promise<void> {
    const now = Date.now();
    const attempt: DeliveryAttempt = { at: new Date(now).toISOString(), status_code: o.statusCode, duration_ms: o.durationMs, error: o.error };
    const attempts = [...(JSON.parse(d.attempts_json) as DeliveryAttempt[]), attempt].slice(-MAX_ATTEMPTS_KEPT);
    const succeeded = o.statusCode !== null && o.statusCode >= 200 && o.statusCode <= 299;
    const gone = o.statusCode === 410;
    const failures = succeeded ? d.failures : d.failures + 1;
    const schedule = this.#deps.retryScheduleS;
    const retry = !succeeded && !gone && o.final !== true && failures <= schedule.length;
    await recordAttempt(this.#deps.db, d.id, token, {
      status: succeeded ? "succeeded" : retry ? "pending" : "failed",
      attemptsJson: JSON.stringify(attempts),
      failures,
      nextAttemptAt: retry ? now + Math.round(schedule[failures - 1] * 1000) : null,
      now,
      // 410 Gone: the receiver asks for nothing more (D31); a submit's webhook_url has no endpoint to disable.
      disableEndpointId: gone && d.endpoint_id !== null ? d.endpoint_id : null,
    });
    if (!succeeded) this.#deps.log.debug({ delivery: d.id, status_code: o.statusCode, error: o.error, retry }, "webhook attempt failed");
  }
}

/** The `error` of a failed attempt: what went wrong, without anything secret (no headers, no body). */
function describe(err: unknown): string {
  if (err instanceof FetchTimeoutError) return `timeout after ${err.timeoutMs} ms`;
  if (err instanceof UnsafeUrlError) return `refused: ${err.message}`.slice(0, 300);
  if (err instanceof FetchFailedError) return `network: ${err.message}`.slice(0, 300);
  return `network: ${err instanceof Error ? err.message : String(err)}`.slice(0, 300);
}
