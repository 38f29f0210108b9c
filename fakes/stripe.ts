/**
 * A loopback fake of the part of Stripe's API the top-ups use (D33), for tests and for trying payments by
 * hand (`npm run fake-stripe`). It answers the official `stripe` SDK in Stripe's real shapes (the
 * `Checkout.Session` and `Event` objects of stripe-node's `resources/Checkout/Sessions.d.ts` and
 * `resources/Events.d.ts`, the error body `{error: {type, code, message, param, doc_url}}`), and it plays
 * the customer who pays: a fake-only route marks a session paid and delivers the signed event to the
 * gateway's webhook, as Stripe does.
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /v1/checkout/sessions` (form-encoded as the SDK sends it: `line_items[0][price_data][unit_amount]=500`) | 200 a `checkout.session`: `cs_test_...`, `status: "open"`, `payment_status: "unpaid"`, `amount_total` = the sum of the line items, `url` on this fake |
 * | `GET /v1/checkout/sessions/{id}` | 200 the session; 404 `resource_missing` |
 * | `GET /c/pay/{id}` | an HTML page with a Pay button (the hosted payment page, for a browser) |
 * | `POST /__fake/checkout/sessions/{id}/pay?deliveries=N&type=&payment_status=&redirect=1` | fake-only: see below |
 *
 * `/pay` marks the session `complete` (and `paid` unless `payment_status=unpaid`, a delayed payment
 * method), builds the event (`type` `checkout.session.completed` by default, or
 * `checkout.session.async_payment_succeeded`, which also marks it paid), signs it with the SDK's
 * `webhooks.generateTestHeaderString` and POSTs it `N` times at once (default 1, at most 20: Stripe's
 * retries and concurrent deliveries) to the webhook URL with a `Stripe-Signature` header. It answers
 * `{session, event, deliveries: [{status, body}]}` (`deliveries` empty without a webhook URL and secret),
 * or with `redirect=1` (the Pay button) a 303 to the session's `success_url`.
 *
 * Every `/v1` call needs the key (`Authorization: Bearer sk_...`, or Basic with the key as user name, as
 * `curl -u sk_test_fake:` sends it): none is 401 "You did not provide an API key", another is 401 "Invalid
 * API Key provided: sk_test_****1234" (Stripe shows the key's end). Invalid parameters are 400
 * `invalid_request_error` with Stripe's codes (`parameter_missing`, `parameter_unknown`,
 * `parameter_invalid_integer`, `url_invalid`, `amount_too_small`, ...). `setFailure` makes every `/v1`
 * call fail with a given status (500 `api_error` by default), as an outage would.
 *
 * `requests` records every request: method, path with query, lower-case headers (`authorization` keeps
 * only its scheme) and the decoded body (the form as nested objects and arrays, values as the text sent).
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import Stripe from "stripe";
import { recordAuthorizationScheme, sendJson, startLoopbackServer } from "./loopback.ts";

/** Options of {@link startStripeFake}. */
export interface StripeFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The secret key accepted (default `sk_test_fake`). */
  apiKey?: string;
  /** Where `/pay` delivers events (the gateway's `/v1/billing/stripe/webhook`); also {@link StripeFake.setWebhook}. */
  webhookUrl?: string;
  /** The signing secret of that endpoint (`whsec_...`, the gateway's `STRIPE_WEBHOOK_SECRET`). */
  webhookSecret?: string;
}

/** One recorded request (see the module comment). */
export interface StripeFakeRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** The Checkout Session as the fake keeps and answers it (Stripe's shape; the fields the fake sets). */
export type FakeCheckoutSession = Record<string, unknown> & {
  id: string;
  object: "checkout.session";
  amount_total: number;
  currency: string;
  status: "open" | "complete" | "expired";
  payment_status: "paid" | "unpaid";
  client_reference_id: string | null;
  metadata: Record<string, string>;
  success_url: string | null;
  cancel_url: string | null;
  url: string | null;
};

/** A Stripe event as delivered (`object: "event"`, `data.object` the session). */
export interface FakeStripeEvent {
  id: string;
  object: "event";
  api_version: string;
  created: number;
  data: { object: Record<string, unknown> };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
}

/** The answer to one delivery: the webhook's status and body (text, or JSON when it parses), or the network error. */
export interface FakeDelivery {
  status: number | null;
  body: unknown;
  error?: string;
}

/** A running fake. */
export interface StripeFake {
  /** Base URL, e.g. `http://127.0.0.1:18490` (the gateway's `STRIPE_API_BASE`). */
  url: string;
  /** Every request received, in order. */
  requests: StripeFakeRequest[];
  /** The sessions created, by id. */
  sessions: Map<string, FakeCheckoutSession>;
  /** Sets (or, with null, clears) the webhook URL and signing secret `/pay` delivers to. */
  setWebhook(webhook: { url: string; secret: string } | null): void;
  /** Makes every `/v1` call answer `status` with Stripe's error body (`type` by status), or with null answer normally. */
  setFailure(status: number | null): void;
  /** `/pay` without HTTP: marks the session as paid (or not) and delivers the event `deliveries` times at once. */
  pay(
    sessionId: string,
    opts?: { deliveries?: number; type?: string; paymentStatus?: "paid" | "unpaid" },
  ): Promise<{ session: FakeCheckoutSession; event: FakeStripeEvent; deliveries: FakeDelivery[] }>;
  /** An event of `type` about `object` in Stripe's shape, with a fresh `evt_` id. */
  buildEvent(type: string, object: Record<string, unknown>): FakeStripeEvent;
  /** Signs `event` with the webhook secret and POSTs it `deliveries` times at once to the webhook URL. */
  deliver(event: FakeStripeEvent, deliveries?: number): Promise<FakeDelivery[]>;
  /** Forgets the recorded requests (the array stays the same object). */
  reset(): void;
  close(): Promise<void>;
}

/** Most deliveries of one `/pay`. */
const MAX_DELIVERIES = 20;
/** The top-level parameters of a session create the fake knows; others are `parameter_unknown`, as at Stripe. */
const CREATE_PARAMS = new Set([
  "mode",
  "line_items",
  "success_url",
  "cancel_url",
  "client_reference_id",
  "metadata",
  "customer_email",
  "payment_method_types",
  "expand",
  "locale",
  "submit_type",
  "expires_at",
]);
/** Stripe's smallest and largest USD Checkout totals, cents. */
const MIN_USD_CENTS = 50;
const MAX_CENTS = 99_999_999;
const ALPHANUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `prefix` + `n` random letters and digits (Stripe's ids). */
function randomId(prefix: string, n: number): string {
  const bytes = randomBytes(n);
  let out = prefix;
  for (const b of bytes) out += ALPHANUM[b % ALPHANUM.length];
  return out;
}

/** Stripe's error body (`{error: {...}}`) with the given fields. */
function stripeError(
  type: string,
  message: string,
  extra: { code?: string; param?: string } = {},
): { error: Record<string, string> } {
  const error: Record<string, string> = { type, message };
  if (extra.code) {
    error.code = extra.code;
    error.doc_url = `https://stripe.com/docs/error-codes/${extra.code.replaceAll("_", "-")}`;
  }
  if (extra.param) error.param = extra.param;
  error.request_log_url = `https://dashboard.stripe.com/test/logs/${randomId("req_", 14)}`;
  return { error };
}

/** A 400 `invalid_request_error` to throw from validation. */
class InvalidRequest extends Error {
  readonly body: ReturnType<typeof stripeError>;
  constructor(message: string, code: string, param?: string) {
    super(message);
    this.body = stripeError("invalid_request_error", message, { code, ...(param === undefined ? {} : { param }) });
  }
}

/**
 * Decodes a form body as stripe-node encodes parameters (`a[b][0][c]=v`) into nested objects, and objects
 * whose keys are all indexes into arrays. Values stay the text sent, as Stripe receives them.
 */
export function decodeStripeForm(text: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const path = key.replace(/\]/g, "").split("[");
    let node: Record<string, unknown> = root;
    path.forEach((segment, i) => {
      if (i === path.length - 1) {
        node[segment] = value;
        return;
      }
      const next = node[segment];
      if (typeof next !== "object" || next === null) node[segment] = {};
      node = node[segment] as Record<string, unknown>;
    });
  }
  const arrays = (v: unknown): unknown => {
    if (typeof v !== "object" || v === null) return v;
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    const fixed = Object.fromEntries(keys.map((k) => [k, arrays(o[k])]));
    if (keys.length > 0 && keys.every((k) => /^\d+$/.test(k))) {
      return keys.sort((a, b) => Number(a) - Number(b)).map((k) => fixed[k]);
    }
    return fixed;
  };
  return arrays(root) as Record<string, unknown>;
}

/** A required integer parameter (text as sent) at least `min`. */
function integerParam(value: unknown, param: string, min: number): number {
  if (value === undefined) throw new InvalidRequest(`Missing required param: ${param}.`, "parameter_missing", param);
  const n = typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidRequest(`Invalid integer: ${String(value)}`, "parameter_invalid_integer", param);
  if (n < min) throw new InvalidRequest(`This value must be greater than or equal to ${min}.`, "parameter_invalid_integer", param);
  return n;
}

/** An optional URL parameter. */
function urlParam(value: unknown, param: string): string | null {
  if (value === undefined || value === "") return null;
  try {
    const u = new URL(String(value));
    if (u.protocol === "http:" || u.protocol === "https:") return String(value);
  } catch {
    // falls through to the error
  }
  throw new InvalidRequest("Not a valid URL", "url_invalid", param);
}

/** Validates a session create as Stripe does (the parts the fake supports) and returns the pieces. */
function validateCreate(p: Record<string, unknown>): {
  currency: string;
  amountTotal: number;
  lineItems: { name: string; unitAmount: number; quantity: number }[];
  metadata: Record<string, string>;
} {
  for (const key of Object.keys(p)) {
    if (!CREATE_PARAMS.has(key)) throw new InvalidRequest(`Received unknown parameter: ${key}`, "parameter_unknown", key);
  }
  if (p.mode === undefined) throw new InvalidRequest("Missing required param: mode.", "parameter_missing", "mode");
  if (p.mode !== "payment") throw new InvalidRequest("This fake supports only `mode=payment`.", "parameter_invalid_string", "mode");
  if (!Array.isArray(p.line_items) || p.line_items.length === 0) {
    throw new InvalidRequest("Missing required param: line_items.", "parameter_missing", "line_items");
  }
  const lineItems = p.line_items.map((raw: unknown, i) => {
    const item = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    const at = `line_items[${i}]`;
    if (item.price !== undefined) throw new InvalidRequest(`No such price: '${String(item.price)}'`, "resource_missing", `${at}[price]`);
    const pd = item.price_data as Record<string, unknown> | undefined;
    if (typeof pd !== "object" || pd === null) {
      throw new InvalidRequest(`Missing required param: ${at}[price_data].`, "parameter_missing", `${at}[price_data]`);
    }
    if (typeof pd.currency !== "string" || !/^[a-z]{3}$/.test(pd.currency)) {
      throw new InvalidRequest(`Invalid currency: ${String(pd.currency)}.`, "parameter_invalid_string", `${at}[price_data][currency]`);
    }
    const unitAmount = integerParam(pd.unit_amount, `${at}[price_data][unit_amount]`, 0);
    const product = pd.product_data as Record<string, unknown> | undefined;
    if (typeof product?.name !== "string" || product.name === "") {
      throw new InvalidRequest(`Missing required param: ${at}[price_data][product_data][name].`, "parameter_missing", `${at}[price_data][product_data][name]`);
    }
    const quantity = integerParam(item.quantity, `${at}[quantity]`, 1);
    return { name: product.name, unitAmount, quantity, currency: pd.currency };
  });
  const currency = lineItems[0].currency;
  if (lineItems.some((l) => l.currency !== currency)) {
    throw new InvalidRequest("All line items must use the same currency.", "parameter_invalid_string", "line_items");
  }
  const amountTotal = lineItems.reduce((sum, l) => sum + l.unitAmount * l.quantity, 0);
  if (currency === "usd" && amountTotal < MIN_USD_CENTS) {
    throw new InvalidRequest("The Checkout Session's total amount due must add up to at least $0.50 usd", "amount_too_small", "line_items");
  }
  if (amountTotal > MAX_CENTS) throw new InvalidRequest("Amount must be no more than $999,999.99", "amount_too_large", "line_items");
  if (typeof p.client_reference_id === "string" && p.client_reference_id.length > 200) {
    throw new InvalidRequest("Invalid string: client_reference_id must be at most 200 characters.", "parameter_invalid_string", "client_reference_id");
  }
  const metadata: Record<string, string> = {};
  if (p.metadata !== undefined && p.metadata !== "") {
    if (typeof p.metadata !== "object" || p.metadata === null || Array.isArray(p.metadata)) {
      throw new InvalidRequest("Invalid metadata: must be an object.", "parameter_invalid_string", "metadata");
    }
    for (const [k, v] of Object.entries(p.metadata)) {
      if (typeof v !== "string" || k.length > 40 || v.length > 500) {
        throw new InvalidRequest("Metadata keys are at most 40 characters and values at most 500.", "parameter_invalid_string", `metadata[${k}]`);
      }
      metadata[k] = v;
    }
  }
  return { currency, amountTotal, lineItems, metadata };
}

/** The key of a `/v1` call (`Bearer <key>`, or Basic with the key as user name), or null. */
function keyOf(req: IncomingMessage): string | null {
  const h = req.headers.authorization ?? "";
  const bearer = /^Bearer\s+(\S+)$/i.exec(h);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+(\S+)$/i.exec(h);
  if (basic) return Buffer.from(basic[1], "base64").toString("utf8").split(":")[0] || null;
  return null;
}

/** Stripe's error `type` for an outage status. */
function failureType(status: number): string {
  if (status === 401) return "invalid_request_error";
  if (status === 429) return "invalid_request_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

function html(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "content-length": String(Buffer.byteLength(body)) });
  res.end(body);
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

/** Starts the fake on loopback (see the module comment). */
export async function startStripeFake(options: StripeFakeOptions = {}): Promise<StripeFake> {
  const apiKey = options.apiKey ?? "sk_test_fake";
  const requests: StripeFakeRequest[] = [];
  const sessions = new Map<string, FakeCheckoutSession>();
  let webhook: { url: string; secret: string } | null =
    options.webhookUrl && options.webhookSecret ? { url: options.webhookUrl, secret: options.webhookSecret } : null;
  let failure: number | null = null;
  let baseUrl = "";

  const buildEvent = (type: string, object: Record<string, unknown>): FakeStripeEvent => ({
    id: randomId("evt_", 24),
    object: "event",
    api_version: Stripe.API_VERSION,
    created: Math.floor(Date.now() / 1000),
    data: { object: structuredClone(object) },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  });

  const deliver = async (event: FakeStripeEvent, deliveries = 1): Promise<FakeDelivery[]> => {
    if (webhook === null) return [];
    const target = webhook;
    const payload = JSON.stringify(event, null, 2);
    const once = async (): Promise<FakeDelivery> => {
      // Stripe signs every attempt with its own timestamp.
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: target.secret });
      try {
        const res = await fetch(target.url, {
          method: "POST",
          headers: {
            "content-type": "application/json; charset=utf-8",
            "stripe-signature": signature,
            "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
          },
          body: payload,
          signal: AbortSignal.timeout(10_000),
        });
        const text = await res.text();
        let body: unknown = text;
        try {
          body = JSON.parse(text) as unknown;
        } catch {
          // not JSON: keep the text
        }
        return { status: res.status, body };
      } catch (err) {
        return { status: null, body: null, error: err instanceof Error ? err.message : String(err) };
      }
    };
    return Promise.all(Array.from({ length: Math.min(Math.max(1, deliveries), MAX_DELIVERIES) }, once));
  };

  const pay: StripeFake["pay"] = async (sessionId, opts = {}) => {
    const session = sessions.get(sessionId);
    if (!session) throw new InvalidRequest(`No such checkout.session: '${sessionId}'`, "resource_missing", "session");
    const type = opts.type ?? "checkout.session.completed";
    if (type !== "checkout.session.completed" && type !== "checkout.session.async_payment_succeeded") {
      throw new InvalidRequest(`The fake pays with checkout.session.completed or checkout.session.async_payment_succeeded, not ${type}.`, "parameter_invalid_string", "type");
    }
    session.status = "complete";
    session.url = null;
    session.payment_status = type === "checkout.session.async_payment_succeeded" ? "paid" : (opts.paymentStatus ?? "paid");
    session.payment_intent = (session.payment_intent as string | null) ?? randomId("pi_", 24);
    const event = buildEvent(type, session);
    return { session, event, deliveries: await deliver(event, opts.deliveries ?? 1) };
  };

  const createSession = (p: Record<string, unknown>): FakeCheckoutSession => {
    const v = validateCreate(p);
    const id = randomId("cs_test_a1", 56);
    const created = Math.floor(Date.now() / 1000);
    const session: FakeCheckoutSession = {
      id,
      object: "checkout.session",
      adaptive_pricing: null,
      after_expiration: null,
      allow_promotion_codes: null,
      amount_subtotal: v.amountTotal,
      amount_total: v.amountTotal,
      automatic_tax: { enabled: false, liability: null, provider: null, status: null },
      billing_address_collection: null,
      cancel_url: urlParam(p.cancel_url, "cancel_url"),
      client_reference_id: typeof p.client_reference_id === "string" ? p.client_reference_id : null,
      client_secret: null,
      collected_information: null,
      consent: null,
      consent_collection: null,
      created,
      currency: v.currency,
      currency_conversion: null,
      custom_fields: [],
      custom_text: { after_submit: null, shipping_address: null, submit: null, terms_of_service_acceptance: null },
      customer: null,
      customer_creation: "if_required",
      customer_details: null,
      customer_email: typeof p.customer_email === "string" ? p.customer_email : null,
      discounts: [],
      expires_at: created + 24 * 3600,
      invoice: null,
      invoice_creation: { enabled: false, invoice_data: null },
      livemode: false,
      locale: null,
      metadata: v.metadata,
      mode: "payment",
      payment_intent: null,
      payment_link: null,
      payment_method_collection: "if_required",
      payment_method_configuration_details: null,
      payment_method_options: {},
      payment_method_types: ["card"],
      payment_status: "unpaid",
      phone_number_collection: { enabled: false },
      recovered_from: null,
      saved_payment_method_options: null,
      setup_intent: null,
      shipping_address_collection: null,
      shipping_cost: null,
      shipping_options: [],
      status: "open",
      submit_type: null,
      subscription: null,
      success_url: urlParam(p.success_url, "success_url"),
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      ui_mode: "hosted",
      url: `${baseUrl}/c/pay/${id}`,
      wallet_options: null,
    };
    sessions.set(id, session);
    return session;
  };

  const api = (req: IncomingMessage, res: ServerResponse, url: URL, body: Record<string, unknown>): void => {
    const key = keyOf(req);
    if (key === null) {
      return sendJson(res, 401, stripeError("invalid_request_error", "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."));
    }
    if (key !== apiKey) {
      const masked = key.length > 12 ? `${key.slice(0, 8)}${"*".repeat(key.length - 12)}${key.slice(-4)}` : "****";
      return sendJson(res, 401, stripeError("invalid_request_error", `Invalid API Key provided: ${masked}`));
    }
    if (failure !== null) {
      return sendJson(res, failure, stripeError(failureType(failure), "An error occurred with our connection to Stripe. (fake outage)"));
    }
    const requestId = { "request-id": randomId("req_", 14) };
    if (req.method === "POST" && url.pathname === "/v1/checkout/sessions") return sendJson(res, 200, createSession(body), requestId);
    const get = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(url.pathname);
    if (req.method === "GET" && get) {
      const s = sessions.get(decodeURIComponent(get[1]));
      if (s) return sendJson(res, 200, s, requestId);
      throw new InvalidRequest(`No such checkout.session: '${decodeURIComponent(get[1])}'`, "resource_missing", "session");
    }
    return sendJson(res, 404, stripeError("invalid_request_error", `Unrecognized request URL (${req.method ?? "GET"}: ${url.pathname}).`));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://fake");
    const text = raw.toString("utf8");
    const type = req.headers["content-type"] ?? "";
    let body: Record<string, unknown> = {};
    if (text !== "") body = type.includes("json") ? (JSON.parse(text) as Record<string, unknown>) : decodeStripeForm(text);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = recordAuthorizationScheme(name, Array.isArray(value) ? value.join(", ") : value);
    }
    requests.push({ method: req.method ?? "GET", path: url.pathname + url.search, headers, body });
    try {
      if (url.pathname.startsWith("/v1/")) return api(req, res, url, { ...decodeStripeForm(url.search.slice(1)), ...body });
      const page = /^\/c\/pay\/([^/]+)$/.exec(url.pathname);
      if (req.method === "GET" && page) {
        const s = sessions.get(decodeURIComponent(page[1]));
        if (!s) return html(res, 404, "<!doctype html><title>Not found</title><p>No such Checkout Session.</p>");
        const amount = `${(s.amount_total / 100).toFixed(2)} ${s.currency.toUpperCase()}`;
        return html(
          res,
          200,
          `<!doctype html><meta charset="utf-8"><title>Pay ${escapeHtml(amount)} (Stripe fake)</title>` +
            `<h1>Stripe Checkout (fake)</h1><p>${escapeHtml(String((s.metadata.user_id ?? s.client_reference_id) ?? ""))}: ${escapeHtml(amount)}</p>` +
            `<form method="post" action="/__fake/checkout/sessions/${encodeURIComponent(s.id)}/pay?redirect=1"><button>Pay ${escapeHtml(amount)}</button></form>` +
            (s.cancel_url ? `<p><a href="${escapeHtml(s.cancel_url)}">Cancel</a></p>` : ""),
        );
      }
      const payPath = /^\/__fake\/checkout\/sessions\/([^/]+)\/pay$/.exec(url.pathname);
      if (req.method === "POST" && payPath) {
        const q = url.searchParams;
        const paymentStatus = q.get("payment_status");
        const out = await pay(decodeURIComponent(payPath[1]), {
          deliveries: q.has("deliveries") ? Number(q.get("deliveries")) || 1 : 1,
          ...(q.has("type") ? { type: q.get("type") ?? "" } : {}),
          ...(paymentStatus === "paid" || paymentStatus === "unpaid" ? { paymentStatus } : {}),
        });
        if (q.get("redirect") === "1" && out.session.success_url) {
          res.writeHead(303, { location: out.session.success_url });
          res.end();
          return;
        }
        return sendJson(res, 200, out);
      }
      return sendJson(res, 404, stripeError("invalid_request_error", `Unrecognized request URL (${req.method ?? "GET"}: ${url.pathname}).`));
    } catch (err) {
      if (err instanceof InvalidRequest) return sendJson(res, err.body.error.code === "resource_missing" ? 404 : 400, err.body);
      throw err;
    }
  };

  const server = await startLoopbackServer(
    { port: options.port, host: options.host, errorBody: (_status, message) => stripeError("api_error", message) },
    handle,
  );
  baseUrl = server.url;
  return {
    url: server.url,
    requests,
    sessions,
    setWebhook(w) {
      webhook = w;
    },
    setFailure(status) {
      failure = status;
    },
    pay,
    buildEvent,
    deliver,
    reset() {
      requests.length = 0;
    },
    close: () => server.close(),
  };
}
