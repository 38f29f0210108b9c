/**
 * Memory under request bodies (issue "Hardening" 7, reworked by issue 27 point 5: the budget counts bytes,
 * not guesses). One process-wide budget (`BODY_BUDGET_MB`) bounds the bytes of request bodies held in
 * memory at once, and it counts what actually arrives:
 *
 * - a body with a declared `Content-Length` (within the body limit) reserves that many bytes up front,
 *   before anything is read, so that a body the budget cannot take is refused at once, while the client
 *   can still read the answer (Node discards the unread body as it arrives, holding none of it);
 * - a body without one (`Transfer-Encoding: chunked`) reserves its bytes as they arrive, one chunk at a
 *   time: a small chunked body costs what it weighs, and a slow or stalled one holds only what it sent;
 * - a body is refused, with 503 `service_unavailable` and `Retry-After: 1` in the D1 body, only when the
 *   bytes it brings would take the budget over its bound (mid-body, the answer closes the connection);
 * - a body that stops arriving (nothing received for `BODY_IDLE_TIMEOUT_S` while it is being read) is
 *   abandoned: 408 `invalid_request` and the connection closed. A body that trickles in is bounded by
 *   Fastify's `requestTimeout` (`REQUEST_TIMEOUT_S`, Node's deadline for a whole request: app.ts), whose
 *   408 is answered by router-errors.ts (so a client that declares a large length and then trickles its
 *   bytes holds that reservation at most that long);
 * - every reservation is given back once, when the answer is done or the connection closes, whatever
 *   ended the request (answer, refusal, time-out, client abort, error).
 *
 * The bytes are counted where the body is read, through Fastify's own mechanism for it: the `preParsing`
 * hook {@link BodyBudget.preParsing} hands the content-type parsers a metered stream in place of the
 * request. Multipart bodies are read by the route through `@fastify/multipart`, which reads the request
 * itself; multipart.ts meters them with {@link watchRawBody}.
 *
 * The bound holds on the accounting at every moment: `inUse` never exceeds `maxBytes` (tests read
 * {@link BodyBudget.peak}). A body costs about two to three times its size while it is parsed (the chunks,
 * the joined text, the parsed value), so the default of 64 MB keeps a process well under 512 MB whatever
 * the number of uploads. The budget is at least the body limit (config.ts), so one body always fits alone.
 */
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest, RequestPayload } from "fastify";
import { AppError } from "../errors.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** The process's request-body budget (app.ts; tests read its accounting). */
    bodyBudget: BodyBudget;
  }
}

/** Methods whose body Fastify never reads (its `bodyless` set): nothing is reserved for them. */
const BODYLESS = new Set(["GET", "HEAD", "TRACE"]);

/** The meter of each request being read, by its Node request (for {@link watchRawBody}). */
const METERS = new WeakMap<IncomingMessage, BodyMeter>();

/**
 * The answer to a body the budget cannot take now (the D1 body of hardening point 7). `midBody`: part of
 * the body has been read, the rest never will be, so the connection is closed after the answer; a body
 * refused before any of it was read leaves the connection open (Node discards the body).
 */
function refusal(midBody: boolean): AppError {
  const headers: Record<string, string> = { "Retry-After": "1" };
  if (midBody) headers.connection = "close";
  return new AppError(503, "service_unavailable", "Too many large request bodies are being received right now; retry shortly.", null, headers);
}

/** The answer to a body that stopped arriving; the connection is closed after it. */
function stalled(idleMs: number): AppError {
  return new AppError(408, "invalid_request", `The request body stopped arriving (nothing received for ${idleMs / 1000} s).`, null, {
    connection: "close",
  });
}

/** The declared `Content-Length` as a number, or null when absent or not plain digits. */
function declaredLength(request: FastifyRequest): number | null {
  const raw = request.headers["content-length"];
  return typeof raw === "string" && /^\d{1,15}$/.test(raw) ? Number(raw) : null;
}

/** The budget of one process: bytes of request bodies held at once. */
export class BodyBudget {
  /** The bound, bytes (`BODY_BUDGET_MB`). */
  readonly maxBytes: number;
  /** The largest body accepted, bytes (Fastify's `bodyLimit`): a larger declared length is left to its 413. */
  readonly bodyLimitBytes: number;
  /** Milliseconds without a byte after which a body being read is abandoned (`BODY_IDLE_TIMEOUT_S`). */
  readonly idleTimeoutMs: number;
  #inUse = 0;
  #peak = 0;

  /**
   * @param maxBytes bytes of request bodies held at once (`BODY_BUDGET_MB`, at least `bodyLimitBytes`).
   * @param bodyLimitBytes the largest body accepted.
   * @param idleTimeoutMs milliseconds without a byte after which a body being read is abandoned (408).
   */
  constructor(maxBytes: number, bodyLimitBytes: number, idleTimeoutMs: number) {
    this.maxBytes = maxBytes;
    this.bodyLimitBytes = bodyLimitBytes;
    this.idleTimeoutMs = idleTimeoutMs;
  }

  /** Bytes reserved now. */
  get inUse(): number {
    return this.#inUse;
  }

  /** The most bytes ever reserved at once by this budget (never above `maxBytes`). */
  get peak(): number {
    return this.#peak;
  }

  /** Takes `bytes` from the budget; false (and nothing taken) when that would exceed the bound. */
  take(bytes: number): boolean {
    if (this.#inUse + bytes > this.maxBytes) return false;
    this.#inUse += bytes;
    if (this.#inUse > this.#peak) this.#peak = this.#inUse;
    return true;
  }

  /** Gives back `bytes` taken by {@link take}. */
  give(bytes: number): void {
    this.#inUse -= bytes;
  }

  /**
   * A Fastify `preParsing` hook (root scope: every route). A request whose body Fastify may read gets a
   * meter: its declared length is reserved now, and the parsers read the body through a metered stream
   * that counts the rest as it arrives. Requests without a body pass untouched.
   * Refusal: 503 `service_unavailable` with `Retry-After: 1` when the declared length does not fit now.
   */
  readonly preParsing = (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: RequestPayload,
    done: (err: Error | null, payload?: RequestPayload) => void,
  ): void => {
    const declared = declaredLength(request);
    const chunked = request.headers["transfer-encoding"] !== undefined;
    if (BODYLESS.has(request.method) || (!chunked && (declared === null || declared === 0))) {
      done(null, payload);
      return;
    }
    const meter = new BodyMeter(this);
    // A declared length over the body limit is Fastify's 413, answered before anything is read.
    if (declared !== null && declared <= this.bodyLimitBytes && !meter.reserve(declared)) {
      done(refusal(false));
      return;
    }
    reply.raw.once("close", meter.release);
    METERS.set(request.raw, meter);
    done(null, new MeteredBody(request.raw, meter));
  };
}

/**
 * The accounting of one request's body: what it has reserved, what has arrived, and the idle timer
 * while it is being read. Released once, when its answer closes.
 */
class BodyMeter {
  readonly #budget: BodyBudget;
  #reserved = 0;
  #received = 0;
  #released = false;
  /** The idle timer while the body is being read; null before and after. */
  #timer: NodeJS.Timeout | null = null;
  /** The read ended (whole, failed or abandoned): the idle timer never starts again. */
  #ended = false;

  constructor(budget: BodyBudget) {
    this.#budget = budget;
  }

  /** Reserves `bytes` more; false when the budget cannot take them (nothing reserved then). */
  reserve(bytes: number): boolean {
    if (!this.#budget.take(bytes)) return false;
    this.#reserved += bytes;
    return true;
  }

  /**
   * Starts the idle timer of a body being read: `onStall` gets the 408 when nothing arrives for the idle
   * time, unless `pausedHere()` says the reader itself paused the body (backpressure on our side is not
   * the client's stall). Idempotent.
   */
  start(onStall: (err: AppError) => void, pausedHere: () => boolean): void {
    if (this.#timer !== null || this.#ended || this.#released) return;
    const idleMs = this.#budget.idleTimeoutMs;
    this.#timer = setTimeout(() => {
      if (pausedHere()) {
        this.#timer?.refresh();
        return;
      }
      this.stop();
      onStall(stalled(idleMs));
    }, idleMs);
    this.#timer.unref();
  }

  /**
   * Counts `bytes` just received: progress for the idle timer, and a reservation for whatever goes past
   * what is already reserved (a chunked body, or more than declared). Returns the 503 refusal when the
   * budget cannot take them, else null. Bytes arriving after the release are not counted (nobody keeps them).
   */
  count(bytes: number): AppError | null {
    if (this.#released) return null;
    this.#timer?.refresh();
    this.#received += bytes;
    const beyond = this.#received - this.#reserved;
    if (beyond > 0 && !this.reserve(beyond)) {
      this.stop();
      return refusal(true);
    }
    return null;
  }

  /** Stops the idle timer for good (the body ended, failed or was abandoned). */
  stop(): void {
    this.#ended = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Gives the reservation back (once): the answer is done or the connection closed. */
  readonly release = (): void => {
    if (this.#released) return;
    this.#released = true;
    this.stop();
    this.#budget.give(this.#reserved);
    this.#reserved = 0;
  };
}

/**
 * The request body as the content-type parsers read it (the stream a `preParsing` hook returns): the
 * request's bytes unchanged, each chunk counted by the meter before it is passed on. Lazy: it starts
 * reading the request only when a parser reads it, so a route that reads the request itself (multipart)
 * or never reads the body leaves the request untouched. It fails with the meter's 503 or 408 (Fastify
 * answers that error and closes the connection), and with the request's own error when the client
 * goes away.
 */
class MeteredBody extends Readable {
  /** Bytes read from the request (Fastify checks them against `Content-Length` and the body limit). */
  receivedEncodedLength = 0;
  readonly #raw: IncomingMessage;
  readonly #meter: BodyMeter;
  #attached = false;

  constructor(raw: IncomingMessage, meter: BodyMeter) {
    super();
    this.#raw = raw;
    this.#meter = meter;
  }

  override _read(): void {
    if (this.#attached) {
      this.#raw.resume();
      return;
    }
    this.#attached = true;
    const raw = this.#raw;
    if (raw.destroyed) {
      this.destroy(new Error("The request was closed before its body arrived."));
      return;
    }
    raw.on("data", this.#onData);
    raw.on("end", this.#onEnd);
    raw.on("error", this.#onError);
    raw.on("close", this.#onClose);
    this.#meter.start((err) => this.destroy(err), () => raw.isPaused());
  }

  #onData = (chunk: Buffer): void => {
    this.receivedEncodedLength += chunk.length;
    const refused = this.#meter.count(chunk.length);
    if (refused !== null) {
      this.destroy(refused);
      return;
    }
    if (!this.push(chunk)) this.#raw.pause();
  };

  #onEnd = (): void => {
    this.#meter.stop();
    this.push(null);
  };

  #onError = (err: Error): void => {
    this.destroy(err);
  };

  #onClose = (): void => {
    if (!this.#raw.readableEnded) this.destroy(new Error("The request was closed before its body arrived."));
  };

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#meter.stop();
    if (this.#attached) {
      const raw = this.#raw;
      raw.off("data", this.#onData);
      raw.off("end", this.#onEnd);
      raw.off("error", this.#onError);
      raw.off("close", this.#onClose);
      // Nothing more of this body is wanted: what still arrives is discarded, not left unread, until the
      // answer closes the connection (a socket closed with unread bytes is reset at once, and the reset
      // can make the client lose the answer).
      if (!raw.readableEnded) raw.resume();
    }
    callback(err);
  }
}

/** What {@link watchRawBody} returns. */
export interface RawBodyWatch {
  /** Settles with the 503 or 408 when the budget refuses the body or it stops arriving; never rejects. */
  failure: Promise<AppError>;
  /** Stops watching (the read ended either way). */
  stop: () => void;
}

/**
 * Meters a body that a route reads from the request itself (`@fastify/multipart` pipes `request.raw`
 * into its parser): counts each chunk as it arrives and runs the idle timer, as the metered stream does
 * for the parsers. Call it in the same tick as the read starts (multipart.ts does). It only observes:
 * it starts observing when the request starts flowing, so it never changes who reads the body or when.
 * On `failure` the caller stops reading and answers the error. A request without a meter (no body, or
 * built outside the app) is not watched: `failure` never settles.
 */
export function watchRawBody(request: FastifyRequest): RawBodyWatch {
  const raw = request.raw;
  const meter = METERS.get(raw);
  if (meter === undefined) return { failure: new Promise<AppError>(() => {}), stop: () => {} };
  let settle!: (err: AppError) => void;
  const failure = new Promise<AppError>((resolve) => (settle = resolve));
  const onData = (chunk: Buffer): void => {
    const refused = meter.count(chunk.length);
    if (refused !== null) {
      stop();
      settle(refused);
    }
  };
  const onEnd = (): void => meter.stop();
  const attach = (): void => {
    raw.on("data", onData);
    raw.once("end", onEnd);
    meter.start(
      (err) => {
        stop();
        settle(err);
      },
      () => raw.isPaused(),
    );
  };
  const stop = (): void => {
    raw.off("resume", attach);
    raw.off("data", onData);
    raw.off("end", onEnd);
    meter.stop();
  };
  // Adding a 'data' listener to a request not yet flowing would start it: wait until its reader does.
  if (raw.readableFlowing === true) attach();
  else raw.once("resume", attach);
  return { failure, stop };
}
