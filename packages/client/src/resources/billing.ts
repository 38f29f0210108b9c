/**
 * Money and usage (D7, D29, D34): `client.billing` (ledger, low-balance alert, checkout),
 * `client.usage` (totals per day, model or key; CSV) and `client.requests` (the usage log, one record
 * per paid call). Amounts are USD numbers with at most 6 decimals.
 *
 * ```ts
 * const summary = await client.usage.summary({ group_by: "model", from: "2026-01-01" });
 * for await (const entry of client.billing.ledger()) console.log(entry.kind, entry.amount_usd);
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import { PagePromise } from "../pagination.ts";
import { type Answer, type JsonBody, type ListQuery, listQuery, type Query } from "../types.ts";

/** `client.billing`. */
export class Billing {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/billing/ledger`: the account's ledger entries, newest first (cursor: the entry `id`). Await for a page, iterate for all. */
  ledger(query: ListQuery<"listLedger"> = {}, options: RequestOptions = {}): PagePromise<Answer<"listLedger">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) => unwrap(this.client.raw.GET("/v1/billing/ledger", { params: { query: listQuery<Query<"listLedger">>({ ...rest, after: cursor }) }, ...this.client.requestInit(options) })),
      (entry) => entry.id,
      after,
    );
  }

  /** `GET /v1/billing/alerts`: the low-balance alert (D34): `low_balance_usd` (null: off), `armed`, `balance_usd`. */
  getAlert(options: RequestOptions = {}): Promise<Answer<"getBillingAlerts">> {
    return unwrap(this.client.raw.GET("/v1/billing/alerts", this.client.requestInit(options)));
  }

  /** `PUT /v1/billing/alerts`: sets the threshold (`low_balance_usd`, USD; null turns it off). */
  setAlert(body: JsonBody<"setBillingAlerts">, options: RequestOptions = {}): Promise<Answer<"setBillingAlerts">> {
    return unwrap(this.client.raw.PUT("/v1/billing/alerts", { body, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/billing/checkout`: whether card deposits are on and their bounds. Throws `NotFoundError` when payments are off. */
  checkoutSettings(options: RequestOptions = {}): Promise<Answer<"getCheckoutSettings">> {
    return unwrap(this.client.raw.GET("/v1/billing/checkout", this.client.requestInit(options)));
  }

  /** `POST /v1/billing/checkout`: a payment page for a deposit of `amount_usd`; resolves with its URL. Not retried. */
  checkout(body: JsonBody<"createCheckout">, options: RequestOptions = {}): Promise<Answer<"createCheckout">> {
    return unwrap(this.client.raw.POST("/v1/billing/checkout", { body, ...this.client.requestInit(options) }));
  }
}

/** `client.usage`: totals of the usage log (D29). */
export class Usage {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /**
   * `GET /v1/usage`: requests, cost (USD) and units per group (`group_by` `day` in `tz`, `model`, `key`
   * or `member`) over `from`..`to` (ISO dates or instants; default the last 30 days), with the total.
   */
  summary(query: Query<"getUsage"> = {}, options: RequestOptions = {}): Promise<Answer<"getUsage">> {
    return unwrap(this.client.raw.GET("/v1/usage", { params: { query }, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/usage.csv`: the same groups as CSV text (`group,requests,cost_usd,<units>...`). */
  async csv(query: Query<"getUsageCsv"> = {}, options: RequestOptions = {}): Promise<string> {
    const init = this.client.requestInit({ ...options, headers: { accept: "text/csv", ...options.headers } });
    return (await unwrap(this.client.raw.GET("/v1/usage.csv", { params: { query }, parseAs: "text", ...init }))) as string;
  }

  /**
   * `GET /v1/usage/export?format=focus`: the FOCUS 1.2 cost and usage dataset as CSV text, one row per UTC
   * day, model, member and key over the UTC days `from`..`to` (`YYYY-MM-DD`, both included; default the
   * current UTC month up to today).
   */
  async focus(query: Omit<Query<"getUsageExport">, "format"> = {}, options: RequestOptions = {}): Promise<string> {
    const init = this.client.requestInit({ ...options, headers: { accept: "text/csv", ...options.headers } });
    return (await unwrap(this.client.raw.GET("/v1/usage/export", { params: { query: { ...query, format: "focus" } }, parseAs: "text", ...init }))) as string;
  }
}

/** `client.requests`: the usage log (D29), one record per paid call; `id` is the call's `X-Svc-Request-Id`. */
export class Requests {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/requests`: records newest first, filtered by `model`, `key_id`, `status`, `mode`, `from`, `to` (cursor: the record `id`). */
  list(query: ListQuery<"listRequests"> = {}, options: RequestOptions = {}): PagePromise<Answer<"listRequests">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) => unwrap(this.client.raw.GET("/v1/requests", { params: { query: listQuery<Query<"listRequests">>({ ...rest, after: cursor }) }, ...this.client.requestInit(options) })),
      (record) => record.id,
      after,
    );
  }

  /** `GET /v1/requests/{id}`: one record. Throws `NotFoundError` for an unknown or another user's id. */
  get(id: string, options: RequestOptions = {}): Promise<Answer<"getRequest">> {
    return unwrap(this.client.raw.GET("/v1/requests/{id}", { params: { path: { id } }, ...this.client.requestInit(options) }));
  }
}
