/**
 * Balance top-ups through Stripe Checkout (D33), with the official `stripe` package for every call to
 * Stripe: `createCheckout` opens a Checkout Session for the caller (nothing is charged or recorded then),
 * and `receiveWebhook` verifies Stripe's signed event and turns a paid session into a ledger `deposit`
 * (D7, D9), exactly once per session.
 *
 * Exactly once: the deposit and a `topups` row keyed by the session id are written in one transaction
 * (storage/migrations/013_topups.ts). Stripe delivers an event at least once, retries it, may deliver it
 * concurrently, and sends both `checkout.session.completed` and, for a delayed payment method,
 * `checkout.session.async_payment_succeeded` for the same session; whichever arrives second finds the row
 * (a unique violation, its transaction rolled back) and records nothing. On PostgreSQL a concurrent
 * insert of the same key waits for the first transaction and then fails, so two deliveries never both
 * credit. The deposit's audit entry (D45, `topup.credited`) is written in the same transaction, so a
 * duplicate delivery writes none either.
 */
import type { Kysely } from "kysely";
import type Stripe from "stripe";
import { credit, inTransaction } from "../billing/ledger.ts";
import { type CheckoutBody, MAX_RETURN_URL_CHARS } from "../contracts/billing.ts";
import { formatUsd, type Micros, microsToUsd, usdToMicros } from "../money.ts";
import type { PaymentsConfig } from "../config.ts";
import { type AppError, errors } from "../errors.ts";
import { isUniqueViolation } from "../storage/db.ts";
import type { Database } from "../storage/schema.ts";
import { getAccount } from "./accounts.ts";
import { userById } from "./accounts.repository.ts";
import type { AccountAuthChanges } from "./auth-cache.ts";
import { insertTopup } from "./topups.repository.ts";
import { type AuditActor, type AuditRequest, recordAudit } from "./audit.ts";

/** Micro-USD in a cent: Stripe amounts are integer cents, the ledger's integer micro-USD (D7). */
export const MICROS_PER_CENT = 10_000;

/** The name of the line item a customer sees on Stripe's payment page. */
export const TOPUP_PRODUCT_NAME = "Balance top-up";

/** The Stripe events that turn a paid Checkout Session into a deposit. */
export const DEPOSIT_EVENTS = ["checkout.session.completed", "checkout.session.async_payment_succeeded"] as const;


/** What a verified webhook event led to (logged by the route; the answer to Stripe is the same 200). */
export type WebhookOutcome =
  /** A deposit was recorded. */
  | "recorded"
  /** The session was already credited (a retry, a concurrent delivery, or its other success event). */
  | "duplicate"
  /** The session is not paid yet (a delayed payment method: `async_payment_succeeded` follows). */
  | "unpaid"
  /** Neither `client_reference_id` nor `metadata.org_id` / `metadata.user_id` names an organization (or a user) here. */
  | "unknown_user"
  /** The session's currency is not USD, or it carries no positive integer `amount_total`. */
  | "unsupported_amount"
  /** Another event type, or a session that is not a one-time payment. */
  | "ignored";

/** The answer of `POST /v1/billing/checkout`: the session id and the Stripe-hosted page to send the customer to. */
export interface CheckoutView {
  id: string;
  url: string;
}

/** The top-up service: a Stripe client configured from `STRIPE_*`, and the database the deposits go to. */
export class Topups {
  readonly #db: Kysely<Database>;
  /** Drops an account's cached keys once a deposit raised its tier. */
  readonly #auth: AccountAuthChanges;
  readonly #stripe: Stripe;
  /** The SDK's error base class (the SDK is loaded by {@link createTopups}). */
  readonly #StripeError: typeof Stripe.errors.StripeError;
  readonly #secretKey: string;
  readonly #webhookSecret: string | null;
  readonly #minMicros: Micros;
  readonly #maxMicros: Micros;
  readonly #publicBaseUrl: string;

  /**
   * `auth` is told of each recorded deposit (the account's cached keys carry its old tier);
   * `config` with its `stripeSecretKey` set (see {@link createTopups}); `publicBaseUrl` builds the default
   * return URLs (`<PUBLIC_BASE_URL>/console/?topup=success|cancel`); `StripeClient` is the SDK's class.
   */
  constructor(
    db: Kysely<Database>,
    auth: AccountAuthChanges,
    config: PaymentsConfig & { stripeSecretKey: string },
    publicBaseUrl: string,
    StripeClient: typeof Stripe,
  ) {
    this.#db = db;
    this.#auth = auth;
    this.#secretKey = config.stripeSecretKey;
    this.#webhookSecret = config.stripeWebhookSecret;
    this.#minMicros = config.topupMinMicros;
    this.#maxMicros = config.topupMaxMicros;
    this.#publicBaseUrl = publicBaseUrl;
    this.#StripeError = StripeClient.errors.StripeError;
    this.#stripe = new StripeClient(config.stripeSecretKey, {
      protocol: config.stripeApiBase.protocol,
      host: config.stripeApiBase.host,
      port: config.stripeApiBase.port,
      // The SDK retries connection failures, 409s and 5xx with an idempotency key it adds itself, so a
      // retried create never opens two sessions; the caller waits at most about a minute in all.
      maxNetworkRetries: 2,
      timeout: 20_000,
      telemetry: false,
      appInfo: { name: "media-gateway" },
    });
  }

  /**
   * `GET /v1/billing/checkout`: what a top-up may be (D33 settings `TOPUP_MIN_USD`, `TOPUP_MAX_USD`, both
   * allowed), so a client can say so before asking; the route answers 404 when payments are off.
   */
  settings(): { object: "billing.checkout_settings"; currency: "usd"; min_usd: number; max_usd: number } {
    return { object: "billing.checkout_settings", currency: "usd", min_usd: microsToUsd(this.#minMicros), max_usd: microsToUsd(this.#maxMicros) };
  }

  /** Whether `STRIPE_WEBHOOK_SECRET` is set: without it the webhook route answers 404. */
  get webhookEnabled(): boolean {
    return this.#webhookSecret !== null;
  }

  /**
   * `POST /v1/billing/checkout` (D33, D41): creates a Checkout Session (mode `payment`, one USD line item
   * of `amount_usd` in cents, quantity 1, `client_reference_id` and `metadata.org_id` = the caller's
   * organization, which the payment credits; `metadata.user_id` = the member who opened it, or absent).
   * `amount_usd` must be a number of whole cents within `TOPUP_MIN_USD`..`TOPUP_MAX_USD` (both allowed);
   * `success_url` / `cancel_url` optional http(s) URLs, by default the console with `?topup=success|cancel`.
   * Nothing is charged or recorded here: the deposit comes with Stripe's event ({@link receiveWebhook}).
   * @throws AppError 400 `invalid_request` (amount or URL), 502 `provider_error` (Stripe unreachable or
   *   refusing; the message and the logged cause carry no secret).
   */
  async createCheckout(
    caller: { accountId: string; userId: string | null },
    body: CheckoutBody,
  ): Promise<CheckoutView> {
    const { accountId } = caller;
    const cents = this.#amountCents(body.amount_usd);
    const successUrl = returnUrl(body.success_url, "success_url") ?? `${this.#publicBaseUrl}/console/?topup=success`;
    const cancelUrl = returnUrl(body.cancel_url, "cancel_url") ?? `${this.#publicBaseUrl}/console/?topup=cancel`;
    let session: Stripe.Checkout.Session;
    try {
      session = await this.#stripe.checkout.sessions.create({
        mode: "payment",
        line_items: [
          {
            quantity: 1,
            price_data: { currency: "usd", unit_amount: cents, product_data: { name: TOPUP_PRODUCT_NAME } },
          },
        ],
        client_reference_id: accountId,
        metadata: caller.userId === null ? { org_id: accountId } : { org_id: accountId, user_id: caller.userId },
        success_url: successUrl,
        cancel_url: cancelUrl,
      });
    } catch (err) {
      throw this.#providerError(err);
    }
    if (typeof session.url !== "string" || session.url === "") {
      throw this.#providerError(new Error(`Stripe answered session ${session.id} without a url`));
    }
    return { id: session.id, url: session.url };
  }

  /**
   * `POST /v1/billing/stripe/webhook` (D33): verifies `raw` (the body bytes exactly as received) against
   * the `Stripe-Signature` header with `STRIPE_WEBHOOK_SECRET`, then records a `deposit` of `amount_total`
   * cents for a paid `checkout.session.completed` or `checkout.session.async_payment_succeeded`, with the
   * session id as its ledger `reference`, once per session; the tier follows the cumulative deposits. The
   * organization credited is `client_reference_id`, else `metadata.org_id`, else `metadata.user_id`; a
   * user id there (a session opened before D41 named the account by its user) credits that user's
   * personal organization. Every other verified event records nothing. `audit` (the webhook request's id,
 * address and user agent) goes on the deposit's audit entry (see {@link recordTopup}).
   * @returns what the event led to, with its ids (for the log).
   * @throws AppError 404 `not_found` (no webhook secret configured), 400 `invalid_request` (missing or bad
   *   signature: nothing is read or recorded).
   */
  async receiveWebhook(
    raw: Buffer,
    signature: string | undefined,
    audit: AuditRequest,
  ): Promise<{ outcome: WebhookOutcome; eventId: string; eventType: string; sessionId: string | null }> {
    if (this.#webhookSecret === null) throw errors.notFound();
    if (signature === undefined || signature === "") {
      throw errors.invalidRequest("Missing Stripe-Signature header.", "stripe-signature");
    }
    let event: Stripe.Event;
    try {
      event = this.#stripe.webhooks.constructEvent(raw, signature, this.#webhookSecret);
    } catch {
      throw errors.invalidRequest(
        "The Stripe-Signature header does not verify this body with the webhook's signing secret (or is too old).",
        "stripe-signature",
      );
    }
    const done = (outcome: WebhookOutcome, sessionId: string | null = null) => ({ outcome, eventId: event.id, eventType: event.type, sessionId });
    if (event.type !== "checkout.session.completed" && event.type !== "checkout.session.async_payment_succeeded") {
      return done("ignored");
    }
    const session = event.data.object;
    if (session.mode !== "payment") return done("ignored", session.id);
    if (session.payment_status !== "paid") return done("unpaid", session.id);
    const cents = session.amount_total;
    if (session.currency !== "usd" || typeof cents !== "number" || !Number.isSafeInteger(cents) || cents <= 0) {
      return done("unsupported_amount", session.id);
    }
    const accountId = session.client_reference_id ?? session.metadata?.org_id ?? session.metadata?.user_id ?? null;
    if (typeof accountId !== "string" || accountId === "") return done("unknown_user", session.id);
    const userId = session.metadata?.user_id;
    const outcome = await recordTopup(this.#db, this.#auth, {
      sessionId: session.id,
      accountId,
      userId: typeof userId === "string" && userId !== "" ? userId : null,
      amountMicros: cents * MICROS_PER_CENT,
      eventId: event.id,
    }, audit);
    return done(outcome, session.id);
  }

  /** `amount_usd` in cents: a number of whole cents within the configured bounds, else 400. */
  #amountCents(value: unknown): number {
    const micros = typeof value === "number" ? usdToMicros(value) : null;
    if (micros === null || micros % MICROS_PER_CENT !== 0 || micros < this.#minMicros || micros > this.#maxMicros) {
      throw errors.invalidRequest(
        `amount_usd must be a number of USD in whole cents from ${formatUsd(this.#minMicros)} to ${formatUsd(this.#maxMicros)}.`,
        "amount_usd",
      );
    }
    return micros / MICROS_PER_CENT;
  }

  /**
   * The 502 for a failed Stripe call. The logged cause names Stripe's error type, status and code and its
   * message with any key cut out (Stripe's "Invalid API Key provided: sk_test_****1234" shows the key's
   * end); the caller's message says nothing about it.
   */
  #providerError(err: unknown): AppError {
    const e = errors.provider("The payment provider could not create the checkout session; nothing was charged.");
    const detail =
      err instanceof this.#StripeError
        ? `Stripe ${err.type}${err.statusCode === undefined ? "" : ` (HTTP ${err.statusCode}${err.code ? `, ${err.code}` : ""})`}: ${err.message}`
        : err instanceof Error
          ? err.message
          : String(err);
    (e as Error).cause = new Error(redactStripeSecrets(detail, this.#secretKey));
    return e;
  }
}

/**
 * Writes the `topups` row and the `deposit` (reference: the session id) in one transaction, then drops the
 * account's cached keys (`auth`) so the tier the deposits earn applies at once (as the operator deposit does).
 * The same transaction writes the audit entry `topup.credited` (D45; target the organization, with the
 * amount, the session id and the balance before and after): its actor is the member who opened the
 * checkout (`metadata.user_id`) when that user exists, else the operator's payment processor
 * (`{type: "operator", id: "stripe"}`); `audit` is the webhook request's facts.
 * @returns `recorded`, `duplicate` (the session was credited before: nothing written) or `unknown_user`.
 */
export async function recordTopup(
  db: Kysely<Database>,
  auth: AccountAuthChanges,
  args: { sessionId: string; accountId: string; userId?: string | null; amountMicros: Micros; eventId: string },
  audit: AuditRequest,
): Promise<"recorded" | "duplicate" | "unknown_user"> {
  let recorded: string | null;
  try {
    recorded = await inTransaction(db, async (trx) => {
      // An organization, or (a session opened before D41) a user: then the user's personal organization.
      let orgId: string | null = args.accountId;
      if (!(await getAccount(trx, orgId))) orgId = (await userById(trx, args.accountId))?.personalOrgId ?? null;
      if (orgId === null || !(await getAccount(trx, orgId))) return null;
      // First the row: a second delivery stops here (unique violation) before any money moves.
      await insertTopup(trx, { sessionId: args.sessionId, accountId: orgId, amountMicros: args.amountMicros, eventId: args.eventId, createdAt: Date.now() });
      const before = await getAccount(trx, orgId);
      const balanceAfter = await credit(trx, { accountId: orgId, kind: "deposit", amountMicros: args.amountMicros, reference: args.sessionId, userId: args.userId ?? null });
      const payer = args.userId ? await userById(trx, args.userId) : null;
      const actor: AuditActor = payer ? { type: "user", id: payer.id, email: payer.email } : { type: "operator", id: "stripe" };
      await recordAudit(trx, { actor, ...audit }, {
        orgId,
        action: "topup.credited",
        target: { type: "org", id: orgId },
        changes: {
          amount_usd: [null, microsToUsd(args.amountMicros)],
          session_id: [null, args.sessionId],
          balance_usd: [before === null ? null : microsToUsd(before.balanceMicros), microsToUsd(balanceAfter)],
        },
      });
      return orgId;
    });
  } catch (err) {
    if (isUniqueViolation(err)) return "duplicate";
    throw err;
  }
  if (recorded === null) return "unknown_user";
  auth.forgetAccount(recorded);
  return "recorded";
}

/** An optional return URL: undefined -> null; an absolute http(s) URL of at most {@link MAX_RETURN_URL_CHARS}; else 400. */
function returnUrl(value: unknown, param: string): string | null {
  if (value === undefined || value === null) return null;
  let url: URL | null = null;
  if (typeof value === "string" && value.length <= MAX_RETURN_URL_CHARS) {
    try {
      url = new URL(value);
    } catch {
      url = null;
    }
  }
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw errors.invalidRequest(`${param} must be an absolute http:// or https:// URL of at most ${MAX_RETURN_URL_CHARS} characters.`, param);
  }
  return value as string;
}

/** `text` with `secretKey` and anything shaped like a Stripe key or webhook secret replaced by `[redacted]`. */
export function redactStripeSecrets(text: string, secretKey: string): string {
  return text.split(secretKey).join("[redacted]").replace(/\b(?:sk|rk|pk|whsec)_[A-Za-z0-9_*]+/g, "[redacted]");
}

/**
 * The top-up service when `STRIPE_SECRET_KEY` is set, else null (the payment routes answer 404). `auth`
 * drops an account's cached keys after its deposit.
 */
export async function createTopups(db: Kysely<Database>, auth: AccountAuthChanges, config: PaymentsConfig, publicBaseUrl: string): Promise<Topups | null> {
  const key = config.stripeSecretKey;
  if (key === null) return null;
  // Loaded only when payments are on: the SDK adds tens of MB to a process that never calls Stripe.
  const { default: StripeClient } = await import("stripe");
  return new Topups(db, auth, { ...config, stripeSecretKey: key }, publicBaseUrl, StripeClient);
}
