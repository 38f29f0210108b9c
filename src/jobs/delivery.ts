/**
 * A job's delivery (D3, D26): its outputs rehosted (rehost.ts) and probed (what each file says of itself:
 * type, size, length, frame rate; upstreams/media-probe.ts), then in one transaction the job marked
 * `succeeded` with its outputs and their facts, and the final amount captured (the rest of the hold released), the usage
 * record finished and the webhook events queued. Every failure on the way ends the job without a charge.
 */
import type { Kysely } from "kysely";
import { inTransaction } from "../billing/ledger.ts";
import { type Micros, usdToMicros } from "../money.ts";
import { settleCapture } from "../billing/paid-call.ts";
import { type JobDelivery, jobPrice, type PricedJob } from "../catalog/job-price.ts";
import { findModelOf } from "../catalog/models.ts";
import { upstreamListPrice } from "../catalog/quote.ts";
import type { ClaimedJob } from "../storage/job-queue.ts";
import type { Database } from "../storage/schema.ts";
import type { MediaFacts } from "../upstreams/media-probe.ts";
import type { MediaOutput } from "../upstreams/types.ts";
import type { JobChangeFeed } from "./changes.ts";
import { onJobEnded } from "./ended.ts";
import { markJobSucceeded } from "./execution.repository.ts";
import { type JobOutput, storedMediaFacts } from "./outputs.ts";
import { jobUsageEnd } from "./job-usage.ts";
import { deleteBlobs, type RehostDeps, rehostOutputs } from "./rehost.ts";
import { isVideoRequest, type JobRequest, requestedSeconds } from "./request.ts";
import { endJobWithoutCharge } from "./sweep.ts";

/** What a real source reported with its outputs (D26): used for the final charge and the job row. */
export interface Delivery {
  durationSec: number | null;
  megapixels: number | null;
  upstreamCostUsd: number | null;
  layer: number;
  source: string | null;
}

/** What a delivery needs: the database, the gateway's job feed, the worker holding the job, and rehosting's deps. */
export interface DeliveryContext extends RehostDeps {
  db: Kysely<Database>;
  changes: JobChangeFeed;
  /** The runner's `worker_id`: the success is written only while the job is still `processing` by it. */
  workerId: string;
}

/**
 * The job as the catalog prices it (catalog/job-price.ts), or null when its model left the catalog (the
 * hold is then the final amount).
 */
function pricedJob(job: ClaimedJob, request: JobRequest): PricedJob | null {
  if (job.kind === "video") {
    const model = findModelOf(job.model, "video");
    const durationSec = requestedSeconds(request);
    return model && durationSec !== null ? { kind: "video", model, order: { durationSec } } : null;
  }
  const model = findModelOf(job.model, "image");
  if (!model || isVideoRequest(request)) return null;
  return { kind: "image", model, order: { n: request.n, quality: request.quality, width: request.width, height: request.height } };
}

/**
 * Rehosts `outputs` in blob storage, then in one transaction marks the job `succeeded` and captures the
 * final amount ({@link jobPrice} of the catalog, never more than the hold); every failure on the way ends
 * the job without a charge (D3). `request` is the job's decoded `request_json`; `reported` what a real
 * source said it delivered, or null (the simulator).
 */
export async function deliverJob(
  ctx: DeliveryContext,
  job: ClaimedJob,
  request: JobRequest,
  outputs: MediaOutput[],
  reported: Delivery | null,
): Promise<void> {
  const { db, workerId, changes } = ctx;
  const kind = job.kind as "image" | "video";
  if (outputs.length === 0) {
    await endJobWithoutCharge(db, { id: job.id, from: "processing", to: "failed", code: "provider_error", message: "The upstream returned no output.", workerId }, changes);
    return;
  }

  // Rehost every output in our blob store: `output.url` never points at the upstream.
  const stored = await rehostOutputs(ctx, job.id, kind, outputs, reported?.source ?? null);
  if (!stored.ok) {
    await endJobWithoutCharge(
      db,
      {
        id: job.id,
        from: "processing",
        to: "failed",
        code: stored.stage === "store" ? "storage_error" : "provider_error",
        message: `The output could not be ${stored.stage === "store" ? "stored" : "downloaded from the upstream"}: ${stored.message}. The hold was released.`,
        workerId,
      },
      changes,
    );
    return;
  }
  const { keys, contentType, facts } = stored;
  const first = facts[0] ?? null;

  // D26: a video's delivered length is what the file's header says, else what the source reports (the
  // simulator reports nothing: its file says it).
  const deliveredSec = kind === "video" ? (first?.durationSec ?? reported?.durationSec ?? null) : null;
  const delivery: Delivery | null = reported === null ? null : { ...reported, durationSec: deliveredSec };
  const priced = pricedJob(job, request);
  const held = Number(job.hold_micros);
  const final = priced === null ? held : jobPrice(priced, { heldMicros: held, delivered: deliveredFacts(kind, first, reported, deliveredSec) });
  const upstreamCost = delivery ? upstreamCostOf(job, final, first, delivery) : null;
  const output: JobOutput = { key: keys[0], content_type: contentType, keys, media: facts.map(storedMediaFacts) };
  // The usage record's end from the row as the update below leaves it (D29): finished by the capture,
  // in its statement on PostgreSQL, rather than read back and updated in two more round trips.
  const usageEnd = jobUsageEnd({
    status: "succeeded",
    kind,
    fallbackLayer: delivery ? delivery.layer : job.fallback_layer,
    durationSec: kind === "video" ? (deliveredSec ?? requestedSeconds(request)) : null,
    requestedSec: requestedSeconds(request),
  });
  const committed = await inTransaction(db, async (trx) => {
    const marked = await markJobSucceeded(trx, {
      jobId: job.id,
      workerId,
      costMicros: final,
      outputJson: JSON.stringify(output),
      durationSec: deliveredSec,
      fallbackLayer: delivery ? delivery.layer : null,
      upstreamCostMicros: upstreamCost?.micros ?? null,
      upstreamCostBasis: upstreamCost?.basis ?? null,
      now: Date.now(),
    });
    if (!marked) return false;
    await onJobEnded(trx, { id: job.id, accountId: job.account_id, status: "succeeded", usageFinished: job.hold_id !== null, webhookUrl: job.webhook_url });
    // The capture last: on PostgreSQL it locks the account row until the commit, and the account's
    // submits (their holds) wait for that lock; the webhook reads above need not hold it.
    if (job.hold_id) await settleCapture(trx, job.hold_id, final, undefined, usageEnd);
    return true;
  });
  if (!committed) {
    // The sweep, a cancel (D30) or a stop ended the job meanwhile and released its hold: keep nothing.
    await deleteBlobs(ctx.blobs, keys);
    return;
  }
  changes.publish({ accountId: job.account_id, jobId: job.id, ended: true, by: workerId });
}

/** The pixel size of a file's facts, or null when it does not say it. */
function sizeOf(facts: MediaFacts | null): { width: number; height: number } | null {
  return facts !== null && facts.width !== null && facts.height !== null ? { width: facts.width, height: facts.height } : null;
}

/**
 * What the catalog's final price needs of a delivery (D26): the source's reported megapixels, the
 * delivered length (`deliveredSec`: the file's, else the source's), and, for an image whose source
 * reported no megapixels, the first image's size read from its header.
 */
function deliveredFacts(kind: "image" | "video", first: MediaFacts | null, reported: Delivery | null, deliveredSec: number | null): JobDelivery {
  const megapixels = reported?.megapixels ?? null;
  const size = kind === "image" && !(megapixels !== null && megapixels > 0) ? sizeOf(first) : null;
  return { megapixels, size, durationSec: deliveredSec };
}

/**
 * What the delivered job cost upstream (issue "Real upstreams, part 1" point 6), micro-USD: what the
 * source reported (BFL's `cost`), else the provider's list price of what was delivered
 * (`upstreamListPrice`: the final charge without the x1.35 markup; imgB-2-pro by delivered megapixels).
 */
function upstreamCostOf(job: ClaimedJob, final: Micros, first: MediaFacts | null, delivery: Delivery): { micros: Micros; basis: "reported" | "list_price" } | null {
  if (delivery.upstreamCostUsd !== null && Number.isFinite(delivery.upstreamCostUsd) && delivery.upstreamCostUsd >= 0) {
    const micros = usdToMicros(delivery.upstreamCostUsd.toFixed(6));
    if (micros !== null) return { micros, basis: "reported" };
  }
  const model = job.kind === "video" ? findModelOf(job.model, "video") : findModelOf(job.model, "image");
  if (!model) return null;
  const size = job.kind === "image" && delivery.megapixels === null ? sizeOf(first) : null;
  const megapixels = delivery.megapixels ?? (size ? (size.width * size.height) / 1_000_000 : null);
  return { micros: upstreamListPrice(model, final, megapixels), basis: "list_price" };
}
