/**
 * The operator's routes (`/v1/admin/...`, D12): `client.admin`, for a client whose key is the
 * operator token (`GATEWAY_ADMIN_TOKEN`). Accounts, their ledger, usage log and limits; deposits;
 * revenue; the upstreams' circuit state.
 *
 * ```ts
 * const admin = new Gateway({ baseUrl, apiKey: process.env.GATEWAY_ADMIN_TOKEN });
 * for await (const account of admin.admin.accounts({ q: "@example.com" })) console.log(account.email);
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import { PagePromise } from "../pagination.ts";
import { type Answer, type JsonBody, type ListQuery, listQuery, type Query } from "../types.ts";

/** `client.admin`. */
export class Admin {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/admin/users`: accounts newest first, `q` matching the email or id (cursor: the account's `user_id`). */
  accounts(query: ListQuery<"adminListAccounts"> = {}, options: RequestOptions = {}): PagePromise<Answer<"adminListAccounts">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) => unwrap(this.client.raw.GET("/v1/admin/users", { params: { query: listQuery<Query<"adminListAccounts">>({ ...rest, after: cursor }) }, ...this.client.requestInit(options) })),
      (account) => account.user_id,
      after,
    );
  }

  /** `GET /v1/admin/users/{user_id}`: one account. */
  account(userId: string, options: RequestOptions = {}): Promise<Answer<"adminGetAccount">> {
    return unwrap(this.client.raw.GET("/v1/admin/users/{user_id}", { params: { path: { user_id: userId } }, ...this.client.requestInit(options) }));
  }

  /** `POST /v1/admin/users/{user_id}/deposits`: credits `amount_usd` to the account. Not retried (a POST without idempotency key). */
  deposit(userId: string, body: JsonBody<"adminDeposit">, options: RequestOptions = {}): Promise<Answer<"adminDeposit">> {
    return unwrap(this.client.raw.POST("/v1/admin/users/{user_id}/deposits", { params: { path: { user_id: userId } }, body, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/admin/users/{user_id}/ledger`: the account's ledger, newest first (cursor: the entry `id`). */
  ledger(userId: string, query: ListQuery<"adminListAccountLedger"> = {}, options: RequestOptions = {}): PagePromise<Answer<"adminListAccountLedger">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) =>
        unwrap(
          this.client.raw.GET("/v1/admin/users/{user_id}/ledger", {
            params: { path: { user_id: userId }, query: listQuery<Query<"adminListAccountLedger">>({ ...rest, after: cursor }) },
            ...this.client.requestInit(options),
          }),
        ),
      (entry) => entry.id,
      after,
    );
  }

  /** `GET /v1/admin/users/{user_id}/requests`: the account's usage log, newest first (cursor: the record `id`). */
  requests(userId: string, query: ListQuery<"adminListAccountRequests"> = {}, options: RequestOptions = {}): PagePromise<Answer<"adminListAccountRequests">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) =>
        unwrap(
          this.client.raw.GET("/v1/admin/users/{user_id}/requests", {
            params: { path: { user_id: userId }, query: listQuery<Query<"adminListAccountRequests">>({ ...rest, after: cursor }) },
            ...this.client.requestInit(options),
          }),
        ),
      (record) => record.id,
      after,
    );
  }

  /** `GET /v1/admin/users/{user_id}/usage`: the account's usage totals, as `client.usage.summary` has them. */
  usage(userId: string, query: Query<"adminGetAccountUsage"> = {}, options: RequestOptions = {}): Promise<Answer<"adminGetAccountUsage">> {
    return unwrap(this.client.raw.GET("/v1/admin/users/{user_id}/usage", { params: { path: { user_id: userId }, query }, ...this.client.requestInit(options) }));
  }

  /** `PUT /v1/admin/users/{user_id}/limits`: the account's own limits, overriding its tier's. */
  setLimits(userId: string, body: JsonBody<"adminSetLimits">, options: RequestOptions = {}): Promise<Answer<"adminSetLimits">> {
    return unwrap(this.client.raw.PUT("/v1/admin/users/{user_id}/limits", { params: { path: { user_id: userId } }, body, ...this.client.requestInit(options) }));
  }

  /** `PUT /v1/admin/users/{user_id}/tier`: sets the account's tier. */
  setTier(userId: string, body: JsonBody<"adminSetTier">, options: RequestOptions = {}): Promise<Answer<"adminSetTier">> {
    return unwrap(this.client.raw.PUT("/v1/admin/users/{user_id}/tier", { params: { path: { user_id: userId } }, body, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/admin/revenue`: charges per `day`, `model` or both over `from`..`to` (USD). */
  revenue(query: Query<"adminGetRevenue"> = {}, options: RequestOptions = {}): Promise<Answer<"adminGetRevenue">> {
    return unwrap(this.client.raw.GET("/v1/admin/revenue", { params: { query }, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/admin/upstreams`: each upstream's circuit (`closed`, `open`, `half_open`) and recent failures. */
  upstreams(options: RequestOptions = {}): Promise<Answer<"adminListUpstreams">> {
    return unwrap(this.client.raw.GET("/v1/admin/upstreams", this.client.requestInit(options)));
  }
}
