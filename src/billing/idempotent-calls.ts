/**
 * Idempotent synchronous paid calls (D37): a request that places a hold and answers directly (speech, music,
 * sound effects, voice design and cloning, chat, messages, transcription, understanding) sent with an
 * `Idempotency-Key` runs once per `(scope, key)`; a retry of it replays the stored answer with no new hold,
 * charge or usage record. The state lives in the database (`idempotent_calls`, migration 015) so every
 * gateway process agrees, and the answer's body in the blob store (audio can be megabytes). The HTTP layer
 * (http/idempotent-calls.ts) decides which routes take part and records the answers; this module knows no HTTP.
 *
 * - {@link IdempotentCalls.begin}: the first request of a key inserts a `running` row (the primary key lets one
 *   of two concurrent inserts win) and gets a {@link CallClaim}; a repeat of the same request gets the stored
 *   answer, or 409 `idempotency_in_progress` while the first still runs; another request under the key is
 *   409 `idempotency_conflict` (D2).
 * - The claim holds a lease ({@link LEASE_MS}) renewed every third of it while its request runs, so a process
 *   that dies mid-call frees the key within a lease; the next request takes the row over. A client that hangs
 *   up keeps its key until its call ended ({@link CallClaim.abandoned}): its retry waits instead of paying twice.
 * - {@link CallClaim.complete} stores a successful answer for {@link ANSWER_TTL_MS} (24 h); a call that failed
 *   (any 4xx or 5xx, or a 2xx whose usage record ended unpaid: a stream that broke off) is released instead,
 *   so a retry runs afresh. Nothing was charged for it.
 * - {@link sweepIdempotentCalls} (run by the job runner's sweep) forgets expired rows and their blobs.
 */
import type { Readable } from "node:stream";
import type { Kysely } from "kysely";
import { AppError } from "../errors.ts";
import { newId } from "../ids.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import type { Database } from "../storage/schema.ts";
import {
  callRow,
  type ClaimValues,
  deleteExpired,
  deleteRunning,
  expiredRows,
  insertRunning,
  markDone,
  renewLease,
  takeOver,
  usageStatusOf,
} from "./idempotent-calls.repository.ts";

/** Blob keys of stored answers: private (the public `GET /v1/files/*` refuses them), replayed only to their caller. */
export const IDEMPOTENT_ANSWER_PREFIX = "idempotent/";

/** How long a stored answer is replayed, ms (24 h). */
export const ANSWER_TTL_MS = 24 * 3600 * 1000;
/** A running claim's lease, ms: a claimant that stops renewing it (its process died) frees the key this long after. */
export const LEASE_MS = 30_000;
/**
 * After its client hung up, how long a claim waits for its answer's end once the call's usage record is
 * settled (the answer of a call that ended may still be on its way out), ms.
 */
const ABANDONED_GRACE_MS = 2000;
/** How often an abandoned claim looks at its call's usage record, ms. */
const ABANDONED_POLL_MS = 500;
/** Expired rows one sweep pass forgets at most (the next pass takes the rest). */
const SWEEP_BATCH = 500;
/** Usage statuses of a call that charged nothing (D29): its answer is not kept. */
const UNPAID = new Set(["failed", "refunded", "expired"]);

/** Who asks, for which key, with which request. */
export interface CallIdentity {
  /** The API key's id, or `account:<id>` for a session's call. */
  scope: string;
  /** The `Idempotency-Key`, 1 to 128 characters. */
  key: string;
  accountId: string;
  /** Hex SHA-256 of the request (method, URL, body or form parts). */
  requestHash: string;
  /** The request's id (`req_...`), also the id of its usage record (D29). */
  requestId: string;
}

/** A stored answer, opened for a replay. The caller must consume or destroy `body`. */
export interface StoredAnswer {
  status: number;
  /** The kept headers, lower-case names (content type, `x-svc-*`, ...). */
  headers: Record<string, string>;
  /** The body's length, bytes. */
  size: number;
  body: Readable;
}

/** What {@link IdempotentCalls.begin} decided. */
export type CallStart = { kind: "run"; claim: CallClaim } | { kind: "replay"; answer: StoredAnswer };

/** 409 `idempotency_in_progress`: the key's first request still runs (retry after a second). */
export function idempotencyInProgress(): AppError {
  return new AppError(
    409,
    "idempotency_in_progress",
    "A request with this Idempotency-Key is still running; retry when it has answered.",
    "Idempotency-Key",
    // `x-should-retry`: the `openai` SDK retries a 409 by default, and this one is worth retrying.
    { "retry-after": "1", "x-should-retry": "true" },
  );
}

/** 409 `idempotency_conflict` (D2): the key was used with another request. */
export function idempotencyConflict(): AppError {
  // `x-should-retry: false`: the same request again can only conflict again (the `openai` SDK reads it).
  return new AppError(409, "idempotency_conflict", "This Idempotency-Key was used with a different request (method, path or body).", "Idempotency-Key", {
    "x-should-retry": "false",
  });
}

/** An async iterable fed chunk by chunk: the body of an answer as it streams, for {@link BlobStore.put}. */
class ChunkQueue implements AsyncIterable<Uint8Array> {
  #chunks: Uint8Array[] = [];
  #ended = false;
  #failed: Error | null = null;
  #wake: (() => void) | null = null;

  push(chunk: Uint8Array): void {
    if (this.#ended || this.#failed) return;
    this.#chunks.push(chunk);
    this.#signal();
  }

  end(): void {
    this.#ended = true;
    this.#signal();
  }

  fail(err: Error): void {
    this.#failed ??= err;
    this.#signal();
  }

  #signal(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    for (;;) {
      if (this.#failed) throw this.#failed;
      const next = this.#chunks.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}

/**
 * The running claim of one request on its key: renews the lease while the request runs, takes the answer's
 * body as it streams ({@link CallClaim.startBody}, {@link CallClaim.push}) and ends by
 * {@link CallClaim.complete} or {@link CallClaim.release}, exactly once.
 */
export class CallClaim {
  readonly #calls: IdempotentCalls;
  readonly #id: CallIdentity;
  #timer: NodeJS.Timeout | null;
  #watch: NodeJS.Timeout | null = null;
  #body: { queue: ChunkQueue; stored: Promise<string | null>; key: string } | null = null;
  #ended = false;

  constructor(calls: IdempotentCalls, id: CallIdentity) {
    this.#calls = calls;
    this.#id = id;
    // Three renewals a lease (every 10 s by default): one lost write does not lose the key.
    this.#timer = setInterval(() => {
      void calls.renew(id).catch(() => {});
    }, Math.max(10, Math.floor(calls.leaseMs / 3)));
    this.#timer.unref();
  }

  /** Starts storing the answer's body (media type `contentType`); the chunks follow through {@link push}. */
  startBody(contentType: string): void {
    if (this.#body !== null || this.#ended) return;
    const queue = new ChunkQueue();
    const key = `${IDEMPOTENT_ANSWER_PREFIX}${newId("ans", 32)}`;
    const type = /^[\x21-\x7e][\x20-\x7e]*$/.test(contentType) && contentType.includes("/") ? contentType : "application/octet-stream";
    // A body that is never completed fails its iterable: the store then keeps nothing.
    const stored = this.#calls.blobs.put(key, queue, { contentType: type }).then(
      () => key,
      () => {
        // The store failed (or the body was given up): later chunks are dropped, not queued.
        queue.fail(new Error("answer not stored"));
        return null;
      },
    );
    this.#body = { queue, stored, key };
  }

  /** One chunk of the answer's body, in order (copied: the caller may reuse its buffer). */
  push(chunk: Uint8Array): void {
    if (this.#body === null) this.startBody("application/octet-stream");
    this.#body?.queue.push(Uint8Array.prototype.slice.call(chunk));
  }

  #stop(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    if (this.#watch !== null) clearInterval(this.#watch);
    this.#timer = null;
    this.#watch = null;
    return true;
  }

  /**
   * The client hung up before the answer ended. The call may still end (and be charged): the claim stays
   * until {@link complete} is called as before, so a retry meanwhile is told the first request still runs
   * rather than running it twice. It is released once the call's usage record is settled and no answer
   * ended within {@link ABANDONED_GRACE_MS} (a stream cut off by the hang-up never ends), or after
   * `maxWaitMs` (the longest a synchronous call runs) whatever happens.
   */
  abandoned(maxWaitMs: number): void {
    if (this.#ended || this.#watch !== null) return;
    const since = Date.now();
    let settledAt: number | null = null;
    let looking = false;
    this.#watch = setInterval(() => {
      if (looking) return;
      looking = true;
      void usageStatusOf(this.#calls.db, this.#id.requestId)
        .then((status) => {
          const now = Date.now();
          if (status !== null && status !== "pending" && status !== "processing") settledAt ??= now;
          if ((settledAt !== null && now - settledAt >= ABANDONED_GRACE_MS) || now - since >= maxWaitMs) return this.release();
        })
        .catch(() => {})
        .finally(() => (looking = false));
    }, ABANDONED_POLL_MS);
    this.#watch.unref();
  }

  /**
   * The answer was sent whole with `status` and `headers`: stores it and marks the key done for
   * {@link ANSWER_TTL_MS}. A status other than 2xx, or a call whose usage record ended unpaid (D29: a stream
   * that broke off after its headers), releases the key instead. Never throws: a store or database failure
   * releases the key (best effort), and the retry then runs afresh.
   */
  async complete(status: number, headers: Record<string, string>): Promise<void> {
    if (!this.#stop()) return;
    const body = this.#body;
    try {
      if (status < 200 || status > 299) return await this.#drop();
      const usage = await usageStatusOf(this.#calls.db, this.#id.requestId);
      if (usage !== null && UNPAID.has(usage)) return await this.#drop();
      let blobKey: string;
      if (body === null) {
        // An empty body: stored as an empty blob so that every done row has one.
        blobKey = `${IDEMPOTENT_ANSWER_PREFIX}${newId("ans", 32)}`;
        await this.#calls.blobs.put(blobKey, new Uint8Array(0), { contentType: headers["content-type"] ?? "application/octet-stream" });
      } else {
        body.queue.end();
        const stored = await body.stored;
        if (stored === null) return await this.#drop();
        blobKey = stored;
      }
      const done = await markDone(this.#calls.db, this.#id.scope, this.#id.key, this.#id.requestId, {
        status,
        headersJson: JSON.stringify(headers),
        blobKey,
        expiresAt: Date.now() + this.#calls.ttlMs,
      });
      // Our lease lapsed and another request took the key over: its answer is the one kept.
      if (!done) await this.#calls.blobs.delete(blobKey).catch(() => {});
    } catch {
      await this.#drop().catch(() => {});
    }
  }

  /** The call failed or its answer was cut off: frees the key (a retry runs afresh) and keeps nothing. */
  async release(): Promise<void> {
    if (!this.#stop()) return;
    await this.#drop();
  }

  async #drop(): Promise<void> {
    const body = this.#body;
    if (body !== null) {
      body.queue.fail(new Error("answer not kept"));
      const stored = await body.stored;
      if (stored !== null) await this.#calls.blobs.delete(stored).catch(() => {});
    }
    await deleteRunning(this.#calls.db, this.#id.scope, this.#id.key, this.#id.requestId);
  }
}

/** The idempotent calls of one gateway over its database and blob store (see the module comment). */
export class IdempotentCalls {
  readonly db: Kysely<Database>;
  readonly blobs: BlobStore;
  readonly leaseMs: number;
  readonly ttlMs: number;

  /**
   * `leaseMs` (default {@link LEASE_MS}) and `ttlMs` (default {@link ANSWER_TTL_MS}) are for tests.
   */
  constructor(db: Kysely<Database>, blobs: BlobStore, opts: { leaseMs?: number; ttlMs?: number } = {}) {
    this.db = db;
    this.blobs = blobs;
    this.leaseMs = opts.leaseMs ?? LEASE_MS;
    this.ttlMs = opts.ttlMs ?? ANSWER_TTL_MS;
  }

  /**
   * Starts request `id` under its key: a first request (or one after the key expired or its claimant's lease
   * lapsed) runs with a {@link CallClaim}; a repeat of a stored request replays its answer.
   * @throws AppError 409 `idempotency_in_progress` (with `Retry-After: 1`) while the key's first request runs;
   *   409 `idempotency_conflict` when the key was used with another request; database errors as they are.
   */
  async begin(id: CallIdentity): Promise<CallStart> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = Date.now();
      const claim: ClaimValues = { scope: id.scope, key: id.key, accountId: id.accountId, requestHash: id.requestHash, owner: id.requestId, now, leaseUntil: now + this.leaseMs };
      if (await insertRunning(this.db, claim)) return { kind: "run", claim: new CallClaim(this, id) };
      const row = await callRow(this.db, id.scope, id.key);
      // Released between the insert and the read: try the insert again.
      if (row === undefined) continue;
      if (row.expires_at <= now) {
        if (!(await takeOver(this.db, { owner: row.owner, expiresAt: row.expires_at }, claim))) continue;
        // The expired answer's body goes with it (the sweep would have deleted both).
        if (row.blob_key !== null) await this.blobs.delete(row.blob_key).catch(() => {});
        return { kind: "run", claim: new CallClaim(this, id) };
      }
      if (row.request_hash !== id.requestHash) throw idempotencyConflict();
      if (row.state === "running") throw idempotencyInProgress();
      const read = row.blob_key === null ? null : await this.blobs.get(row.blob_key);
      if (read === null) {
        // The stored body is gone (its store was emptied): the row is as good as expired.
        await deleteExpired(this.db, { scope: row.scope, idem_key: row.idem_key, owner: row.owner, expires_at: row.expires_at });
        continue;
      }
      return {
        kind: "replay",
        answer: { status: row.status ?? 200, headers: JSON.parse(row.headers_json ?? "{}") as Record<string, string>, size: read.info.size, body: read.body },
      };
    }
    // The key changed hands under us at every attempt: as busy as a running first request.
    throw idempotencyInProgress();
  }

  /** Renews the lease of a running claim (its timer). */
  async renew(id: CallIdentity): Promise<void> {
    await renewLease(this.db, id.scope, id.key, id.requestId, Date.now() + this.leaseMs);
  }
}

/**
 * One sweep pass (jobs/sweep.ts's cadence): forgets up to {@link SWEEP_BATCH} expired rows, stored answers
 * past their {@link ANSWER_TTL_MS} with their blobs and running rows whose lease lapsed. Safe from every
 * process at once: a row is deleted only as it was read. Returns how many rows it deleted.
 */
export async function sweepIdempotentCalls(db: Kysely<Database>, blobs: BlobStore, now = Date.now()): Promise<number> {
  let deleted = 0;
  for (const row of await expiredRows(db, now, SWEEP_BATCH)) {
    if (!(await deleteExpired(db, row))) continue;
    deleted++;
    if (row.blob_key !== null) await blobs.delete(row.blob_key).catch(() => {});
  }
  return deleted;
}
