/**
 * Fetching a URL that a caller (or an upstream) handed to the gateway, without letting it reach the
 * gateway's own network (SSRF protection).
 *
 * Used wherever the gateway itself downloads a URL: `image_url` / `image_urls` of image and video jobs,
 * `audio_url` of transcriptions (spec: up to 100 MB), and upstream output URLs. Rules:
 * - caller URLs must be `https:`; `allowHttp` also admits `http:` (upstream output URLs, tests);
 * - the host must be public unicast: private, loopback, link-local (169.254.169.254 metadata included),
 *   CGNAT, unspecified, multicast, broadcast, reserved, unique-local and IPv4-embedding IPv6 forms are
 *   refused. The WHATWG URL parser normalises numeric-host tricks (`2130706433`, `0x7f.1`, `0177.0.0.1`,
 *   `[::ffff:127.0.0.1]`) to canonical addresses first, and addresses are classified with `ipaddr.js`;
 * - no DNS-rebinding gap: names are resolved inside the connection's own `lookup` hook (undici `Agent`
 *   `connect.lookup`), so the address that is checked is the address connected to; the connected
 *   socket's `remoteAddress` is checked once more before any byte is sent;
 * - redirects are followed by hand, at most {@link MAX_REDIRECTS}, each `Location` re-validated;
 * - a byte cap (refused as soon as `Content-Length` announces more, or the body grows past it) and a
 *   total timeout over all hops.
 *
 * Errors are this module's own classes ({@link UnsafeUrlError}, {@link FetchTooLargeError},
 * {@link FetchTimeoutError}, {@link FetchFailedError}); callers map them to HTTP answers (for example
 * 400 `invalid_image_url`, decisions D2). Nothing here throws an AppError.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP } from "node:net";
import type { LookupFunction, Socket } from "node:net";
import ipaddr from "ipaddr.js";
import type { Agent, buildConnector, Dispatcher } from "undici";
import { loadUndici } from "./undici.ts";

/** Most redirects followed per fetch; the next one fails with `FetchFailedError` (`too_many_redirects`). */
export const MAX_REDIRECTS = 5;

/** Longest URL accepted, in characters. */
export const MAX_URL_LENGTH = 2048;

/** Why a URL was refused before (or instead of) fetching it. */
export type UnsafeUrlReason =
  | "invalid_url"
  | "url_too_long"
  | "scheme_not_allowed"
  | "missing_host"
  | "credentials_in_url"
  | "refused_address";

/**
 * The URL must not be fetched: not a URL, wrong scheme, credentials in it, too long, or its host is (or
 * resolves to) an address outside public unicast. Also thrown for a redirect `Location` that breaks
 * these rules. `address` / `range` are set for `refused_address` (the range name is ipaddr.js's, for
 * example `loopback`, `private`, `linkLocal`).
 */
export class UnsafeUrlError extends Error {
  readonly reason: UnsafeUrlReason;
  readonly address: string | null;
  readonly range: string | null;

  constructor(reason: UnsafeUrlReason, message: string, address: string | null = null, range: string | null = null) {
    super(message);
    this.name = "UnsafeUrlError";
    this.reason = reason;
    this.address = address;
    this.range = range;
  }
}

/**
 * The body is larger than `maxBytes`. `announcedBytes` is the `Content-Length` when that alone was the
 * reason (no body was read), otherwise null (the body was cut off after `maxBytes` + 1 bytes or more).
 */
export class FetchTooLargeError extends Error {
  readonly maxBytes: number;
  readonly announcedBytes: number | null;

  constructor(maxBytes: number, announcedBytes: number | null) {
    super(
      announcedBytes === null
        ? `response body exceeds ${maxBytes} bytes`
        : `response announces ${announcedBytes} bytes; the maximum is ${maxBytes}`,
    );
    this.name = "FetchTooLargeError";
    this.maxBytes = maxBytes;
    this.announcedBytes = announcedBytes;
  }
}

/** The whole fetch (every hop, body included) took longer than `timeoutMs` milliseconds. */
export class FetchTimeoutError extends Error {
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`fetch did not finish within ${timeoutMs} ms`);
    this.name = "FetchTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/** Why a fetch of an acceptable URL failed. */
export type FetchFailedReason = "network" | "http_status" | "too_many_redirects" | "bad_redirect";

/**
 * The fetch failed: network error (DNS failure, refused connection, TLS error, reset), an HTTP status
 * outside 2xx (`status` set), more than {@link MAX_REDIRECTS} redirects, or a redirect without a usable
 * `Location`. The underlying error, if any, is the `cause`.
 */
export class FetchFailedError extends Error {
  readonly reason: FetchFailedReason;
  readonly status: number | null;

  constructor(reason: FetchFailedReason, message: string, status: number | null = null, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "FetchFailedError";
    this.reason = reason;
    this.status = status;
  }
}

/** What a successful fetch returns: the body, its `Content-Type` header (or null) and the URL after redirects. */
export interface SafeFetchResult {
  bytes: Uint8Array;
  contentType: string | null;
  finalUrl: string;
}

/**
 * TEST-ONLY escape hatch, so a loopback server can stand in for a public host. It holds functions, so
 * no configuration value or request input can produce it; only code that passes it explicitly (tests)
 * enables it. Production callers never set it.
 */
export interface PrivateAddressTestHooks {
  /** Replaces DNS resolution: host name (no brackets) -> IP addresses. */
  resolve?: (hostname: string) => Promise<string[]>;
  /**
   * True to let `address` (the literal host, or an address `hostname` resolved to) through although it
   * is not public unicast. Called for every address checked, before connecting and after.
   */
  allowAddress: (address: string, hostname: string) => boolean;
}

/** Options of {@link safeFetch}. */
export interface SafeFetchOptions {
  /** Largest body accepted, in bytes (a non-negative integer). */
  maxBytes: number;
  /** Total time for all hops and the body, in milliseconds (positive). */
  timeoutMs: number;
  /** Also accept `http:` URLs (upstream output URLs, tests). Default false: `https:` only. */
  allowHttp?: boolean;
  /** See {@link PrivateAddressTestHooks}: tests only. */
  allowPrivateForTests?: PrivateAddressTestHooks;
}

/**
 * The ipaddr.js range of an IP address, or a name of this module's own for a refusal: `"unicast"`
 * means public and allowed; anything else is refused. IPv4-mapped IPv6 addresses are classified as the
 * IPv4 address they carry; IPv6 outside global unicast 2000::/3 (for example IPv4-compatible `::a.b.c.d`)
 * is `"notGlobalUnicast"`; a string that is not a canonical IP address is `"invalid"`.
 */
export function classifyAddress(address: string): string {
  let bare = stripBrackets(address);
  const version = isIP(bare);
  if (version === 0) return "invalid";
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // Canonicalise IPv6 first: ipaddr.js reads the dotted tail of `::a.b.c.d` (IPv4-compatible) as if
    // it were `::ffff:a.b.c.d` (IPv4-mapped); the WHATWG form `::xxxx:xxxx` is unambiguous.
    if (version === 6) bare = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
    parsed = ipaddr.parse(bare);
  } catch {
    return "invalid";
  }
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range();
    const range = v6.range();
    if (range !== "unicast") return range;
    if (!v6.match(GLOBAL_UNICAST_V6, 3)) return "notGlobalUnicast";
    return range;
  }
  return (parsed as ipaddr.IPv4).range();
}

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parse("2000::");

/**
 * Cheap request-time check of a URL a caller supplied (no DNS, no network): parses, length at most
 * {@link MAX_URL_LENGTH}, scheme `https:` (or `http:` with `allowHttp`), a host, no user name or
 * password, and a host that is not a refused IP literal (`https://127.0.0.1/`, `https://2130706433/`,
 * `https://[::1]/`, `https://169.254.169.254/` fail here already). Returns the parsed URL, or null when
 * it fails any rule. Host names are only checked at fetch time, by {@link safeFetch}.
 */
export function validateUrlSyntax(url: string, opts: { allowHttp?: boolean } = {}): URL | null {
  try {
    return checkUrl(url, opts.allowHttp === true, undefined);
  } catch (err) {
    if (err instanceof UnsafeUrlError) return null;
    throw err;
  }
}

/**
 * Downloads `url` under the rules of this module (see the file comment) with GET, following at most
 * {@link MAX_REDIRECTS} redirects (each re-validated). Only a 2xx answer succeeds. The body is read
 * raw (no `Accept-Encoding` is sent, so nothing is decompressed) and capped at `opts.maxBytes`.
 *
 * @throws UnsafeUrlError the URL or a redirect target is refused (before any connection to it).
 * @throws FetchTooLargeError the body is (or is announced to be) larger than `opts.maxBytes`.
 * @throws FetchTimeoutError everything together took longer than `opts.timeoutMs`.
 * @throws FetchFailedError network failure, non-2xx status, too many redirects, bad redirect.
 */
export async function safeFetch(url: string, opts: SafeFetchOptions): Promise<SafeFetchResult> {
  if (!Number.isSafeInteger(opts.maxBytes) || opts.maxBytes < 0) {
    throw new RangeError(`maxBytes must be a non-negative integer, got ${opts.maxBytes}`);
  }
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) {
    throw new RangeError(`timeoutMs must be a positive number, got ${opts.timeoutMs}`);
  }
  const allowHttp = opts.allowHttp === true;
  const hooks = opts.allowPrivateForTests;
  // A refused first URL fails before any connection machinery exists.
  let current = checkUrl(url, allowHttp, hooks);

  const call = openPinnedCall(hooks, opts.timeoutMs);
  try {
    for (let redirects = 0; ; redirects++) {
      const res = await send(current, call.agent, call.signal);
      const status = res.statusCode;
      if (REDIRECT_STATUSES.has(status)) {
        discard(res.body);
        const location = headerValue(res.headers, "location");
        if (location === null) {
          throw new FetchFailedError("bad_redirect", `HTTP ${status} without a Location header`, status);
        }
        if (redirects >= MAX_REDIRECTS) {
          throw new FetchFailedError("too_many_redirects", `more than ${MAX_REDIRECTS} redirects`, status);
        }
        let next: string;
        try {
          next = new URL(location, current).href;
        } catch {
          throw new UnsafeUrlError("invalid_url", "redirect Location is not a URL");
        }
        current = checkUrl(next, allowHttp, hooks);
        continue;
      }
      if (status < 200 || status > 299) {
        discard(res.body);
        throw new FetchFailedError("http_status", `HTTP ${status}`, status);
      }
      const announced = headerValue(res.headers, "content-length");
      if (announced !== null && /^\d+$/.test(announced.trim())) {
        const length = Number(announced.trim());
        if (length > opts.maxBytes) {
          discard(res.body);
          throw new FetchTooLargeError(opts.maxBytes, length);
        }
      }
      const bytes = await readCapped(res.body, opts.maxBytes);
      return { bytes, contentType: headerValue(res.headers, "content-type"), finalUrl: current.href };
    }
  } catch (err) {
    if (call.timedOut() && !(err instanceof UnsafeUrlError || err instanceof FetchTooLargeError)) {
      throw new FetchTimeoutError(opts.timeoutMs);
    }
    throw translateError(err);
  } finally {
    call.close();
  }
}

/** The connection machinery of one request of {@link safeFetch} or {@link safePost}. */
interface PinnedCall {
  /** An undici agent whose connections go only to checked addresses ({@link pinnedConnector}). */
  agent: Agent;
  /** Aborted with a {@link FetchTimeoutError} once the deadline passed. */
  signal: AbortSignal;
  /** True once the deadline passed. */
  timedOut(): boolean;
  /** Clears the deadline and destroys the agent; call it once, when the request is over. */
  close(): void;
}

/**
 * Opens the machinery of one request: a deadline of `timeoutMs` (ms) for the whole request, redirects
 * and body included, and a pinned agent whose connect timeout is the deadline, at most 10 s.
 */
function openPinnedCall(hooks: PrivateAddressTestHooks | undefined, timeoutMs: number): PinnedCall {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new FetchTimeoutError(timeoutMs));
  }, timeoutMs);
  const agent = new (loadUndici().Agent)({ connect: pinnedConnector(hooks), connectTimeout: Math.min(timeoutMs, 10_000) });
  return {
    agent,
    signal: controller.signal,
    timedOut: () => timedOut,
    close: () => {
      clearTimeout(timer);
      agent.destroy().catch(() => {});
    },
  };
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

type ResponseData = Dispatcher.ResponseData;

async function send(url: URL, agent: Agent, signal: AbortSignal): Promise<ResponseData> {
  try {
    return await loadUndici().request(url, {
      method: "GET",
      dispatcher: agent,
      signal,
      headers: { accept: "*/*", "user-agent": "media-gateway" },
    });
  } catch (err) {
    throw translateError(err);
  }
}

async function readCapped(body: ResponseData["body"], maxBytes: number): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      discard(body);
      throw new FetchTooLargeError(maxBytes, null);
    }
    chunks.push(chunk);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** Drops a response body without reading it (undici's body emits an error when destroyed early). */
function discard(body: ResponseData["body"]): void {
  body.on("error", () => {});
  body.destroy();
}

/** Our own errors pass through (also when undici wrapped them); anything else is a network failure. */
function translateError(err: unknown): Error {
  const own = findOwnError(err, 0);
  if (own !== null) return own;
  const message = err instanceof Error ? err.message : String(err);
  return new FetchFailedError("network", `fetch failed: ${message}`, null, err);
}

function findOwnError(err: unknown, depth: number): Error | null {
  if (depth > 5 || !(err instanceof Error)) return null;
  if (
    err instanceof UnsafeUrlError ||
    err instanceof FetchTooLargeError ||
    err instanceof FetchTimeoutError ||
    err instanceof FetchFailedError
  ) {
    return err;
  }
  if (err instanceof AggregateError) {
    for (const inner of err.errors) {
      const found = findOwnError(inner, depth + 1);
      if (found !== null) return found;
    }
  }
  return findOwnError(err.cause, depth + 1);
}

function headerValue(headers: ResponseData["headers"], name: string): string | null {
  const value = headers[name];
  if (value === undefined) return null;
  return Array.isArray(value) ? (value[0] ?? null) : value;
}

function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/** Parses and checks one URL (first or redirect target); throws UnsafeUrlError. */
function checkUrl(raw: string, allowHttp: boolean, hooks: PrivateAddressTestHooks | undefined): URL {
  if (typeof raw !== "string") throw new UnsafeUrlError("invalid_url", "URL is not a string");
  if (raw.length > MAX_URL_LENGTH) {
    throw new UnsafeUrlError("url_too_long", `URL is longer than ${MAX_URL_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError("invalid_url", "not a valid URL");
  }
  if (url.href.length > MAX_URL_LENGTH) {
    throw new UnsafeUrlError("url_too_long", `URL is longer than ${MAX_URL_LENGTH} characters`);
  }
  if (!(url.protocol === "https:" || (allowHttp && url.protocol === "http:"))) {
    throw new UnsafeUrlError("scheme_not_allowed", allowHttp ? "URL must be http or https" : "URL must be https");
  }
  if (url.hostname === "") throw new UnsafeUrlError("missing_host", "URL has no host");
  if (url.username !== "" || url.password !== "") {
    throw new UnsafeUrlError("credentials_in_url", "URL must not contain credentials");
  }
  const host = stripBrackets(url.hostname);
  // The URL parser has turned every numeric IPv4 form into dotted decimal and IPv6 into canonical form,
  // so an IP host is recognised here; names are checked when resolved (pinnedLookup).
  if (isIP(host) !== 0) checkAddress(host, host, hooks);
  return url;
}

/** Throws UnsafeUrlError unless `address` is public unicast (or the test hook allows it). */
function checkAddress(address: string, hostname: string, hooks: PrivateAddressTestHooks | undefined): void {
  const bare = stripBrackets(address);
  const range = classifyAddress(bare);
  if (range === "unicast") return;
  if (hooks !== undefined && range !== "invalid" && hooks.allowAddress(bare, hostname)) return;
  throw new UnsafeUrlError(
    "refused_address",
    `host ${hostname} is refused: ${bare} is not a public address (${range})`,
    bare,
    range,
  );
}

/**
 * `lookup` for `net.connect` / `tls.connect`: resolves the name, refuses the whole connection if any
 * resolved address is not public unicast, and hands exactly the checked addresses to the socket (the
 * address connected to is one of them: no second resolution, no rebinding window).
 */
function pinnedLookup(hooks: PrivateAddressTestHooks | undefined): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    const family = options.family === 4 || options.family === 6 ? options.family : 0;
    resolveAll(hostname, family, hooks).then(
      (addresses) => {
        try {
          if (addresses.length === 0) throw new FetchFailedError("network", `host ${hostname} has no address`);
          for (const entry of addresses) checkAddress(entry.address, hostname, hooks);
        } catch (err) {
          callback(err as NodeJS.ErrnoException, "", 0);
          return;
        }
        if (options.all === true) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, "", 0),
    );
  };
}

async function resolveAll(
  hostname: string,
  family: 0 | 4 | 6,
  hooks: PrivateAddressTestHooks | undefined,
): Promise<LookupAddress[]> {
  const bare = stripBrackets(hostname);
  let addresses: LookupAddress[];
  if (hooks?.resolve !== undefined) {
    const resolved = await hooks.resolve(bare);
    addresses = resolved.map((address) => ({ address, family: isIP(address) }));
  } else {
    addresses = await dnsLookup(bare, { all: true, family, order: "verbatim" });
  }
  return family === 0 ? addresses : addresses.filter((entry) => entry.family === family);
}

/**
 * undici connector: connects with {@link pinnedLookup}, then checks the socket's actual peer address
 * once more (covers IP-literal hosts, for which Node skips `lookup`) before the request is written.
 */
function pinnedConnector(hooks: PrivateAddressTestHooks | undefined): buildConnector.connector {
  const base = loadUndici().buildConnector({ lookup: pinnedLookup(hooks) });
  return (options, callback) => {
    base(options, (...args) => {
      const [err, socket] = args;
      if (err !== null) {
        callback(err, null);
        return;
      }
      const peer = (socket as Socket).remoteAddress;
      try {
        if (peer === undefined) throw new FetchFailedError("network", "connection closed before it was checked");
        checkAddress(peer, stripBrackets(options.hostname), hooks);
      } catch (checkErr) {
        socket.destroy();
        callback(checkErr as Error, null);
        return;
      }
      callback(null, socket);
    });
  };
}

/** Options of {@link safePost}. */
export interface SafePostOptions {
  /** Request headers (the body is sent as given; set `content-type` here). */
  headers: Record<string, string>;
  /** Total time for the connection, the request and the answer's first bytes, in milliseconds (positive). */
  timeoutMs: number;
  /** Also accept `http:` URLs. Default false: `https:` only. */
  allowHttp?: boolean;
  /**
   * Let the URL's host be (or resolve to) a private, loopback or other non-public address. An operator
   * switch for webhooks in development and tests (`WEBHOOK_ALLOW_PRIVATE=1`, D31); production leaves it off.
   */
  allowPrivateAddresses?: boolean;
}

/** What the receiver answered: its status code (any, 2xx or not; a redirect is not followed). */
export interface SafePostResult {
  status: number;
}

/** Bytes of an answer read (and dropped) before the connection is let go: a receiver's answer body is not used. */
const POST_ANSWER_READ_BYTES = 64 * 1024;

/**
 * Sends `body` with POST to `url` under the rules of this module (see the file comment: scheme, public
 * addresses checked at connect time and on the connected socket, so a name that was public at
 * validation and now resolves inside is refused). Used to deliver webhooks (D31). Redirects are not
 * followed: the 3xx status is returned like any other. The answer's body is read up to
 * {@link POST_ANSWER_READ_BYTES} and dropped.
 *
 * @throws UnsafeUrlError the URL is refused (before any connection to it, or at connect time).
 * @throws FetchTimeoutError no answer within `opts.timeoutMs`.
 * @throws FetchFailedError network failure (DNS, refused connection, TLS error, reset).
 */
export async function safePost(url: string, body: string, opts: SafePostOptions): Promise<SafePostResult> {
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) {
    throw new RangeError(`timeoutMs must be a positive number, got ${opts.timeoutMs}`);
  }
  const hooks: PrivateAddressTestHooks | undefined = opts.allowPrivateAddresses === true ? { allowAddress: () => true } : undefined;
  const target = checkUrl(url, opts.allowHttp === true, hooks);
  const call = openPinnedCall(hooks, opts.timeoutMs);
  try {
    const res = await loadUndici().request(target, {
      method: "POST",
      dispatcher: call.agent,
      signal: call.signal,
      headers: { "user-agent": "media-gateway", ...opts.headers },
      body,
    });
    let read = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        read += chunk.byteLength;
        if (read > POST_ANSWER_READ_BYTES) break;
      }
    } catch {
      // The status is what counts; a body cut short does not change it.
    }
    discard(res.body);
    return { status: res.statusCode };
  } catch (err) {
    if (call.timedOut() && !(err instanceof UnsafeUrlError)) throw new FetchTimeoutError(opts.timeoutMs);
    throw translateError(err);
  } finally {
    call.close();
  }
}
