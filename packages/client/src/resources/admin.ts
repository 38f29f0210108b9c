/**
 * The operator's routes (`/v1/admin/...`, D12): `client.admin`, for a client whose key is the
 * operator token (`GATEWAY_ADMIN_TOKEN`). Accounts, their ledger, usage log and limits; deposits;
 * revenue; the upstreams' circuit state. `client.admin.orgs` does the same by organization (D41: the
 * organization holds the balance, tier and limits; `/v1/admin/users/...` reach a user's personal one).
 *
 * ```ts
 * const admin = new Gateway({ baseUrl, apiKey: process.env.GATEWAY_ADMIN_TOKEN });
 * for await (const account of admin.admin.accounts({ q: "@example.com" })) console.log(account.email);
 * for await (const org of admin.admin.orgs.list({ q: "Acme" })) console.log(org.org_id, org.balance_usd);
 * await admin.admin.orgs.deposit(orgId, { amount_usd: 25 });
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import { PagePromise } from "../pagination.ts";
import { type Answer, type JsonBody, type ListQuery, listQuery, type Query } from "../types.ts";

/** `client.admin`. */
export class Admin {
  private readonly client: APIClient;
  /** `client.admin.orgs`: organizations (D41). */
  readonly orgs: AdminOrgs;

  constructor(client: APIClient) {
    this.client = client;
    this.orgs = new AdminOrgs(client);
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

/** `client.admin.orgs`: the operator's view of organizations (D41), as `client.admin` has it of accounts. */
export class AdminOrgs {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /**
   * `GET /v1/admin/orgs`: organizations newest first (`org_id`, `name`, `members`, `keys`, `balance_usd`,
   * `tier`...); `q` matches an exact organization id or the start of a name, case-insensitive (a personal
   * organization is named after its owner's email). Cursor: the `org_id`.
   */
  list(query: ListQuery<"adminListOrgs"> = {}, options: RequestOptions = {}): PagePromise<Answer<"adminListOrgs">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) => unwrap(this.client.raw.GET("/v1/admin/orgs", { params: { query: listQuery<Query<"adminListOrgs">>({ ...rest, after: cursor }) }, ...this.client.requestInit(options) })),
      (org) => org.org_id,
      after,
    );
  }

  /** `GET /v1/admin/orgs/{org_id}`: one organization: balance, tier, members, overrides and effective limits. Throws `NotFoundError`. */
  get(orgId: string, options: RequestOptions = {}): Promise<Answer<"adminGetOrg">> {
    return unwrap(this.client.raw.GET("/v1/admin/orgs/{org_id}", { params: { path: { org_id: orgId } }, ...this.client.requestInit(options) }));
  }

  /** `POST /v1/admin/orgs/{org_id}/deposits`: credits `amount_usd` (USD) to the organization; deposits raise its tier. Not retried. */
  deposit(orgId: string, body: JsonBody<"adminOrgDeposit">, options: RequestOptions = {}): Promise<Answer<"adminOrgDeposit">> {
    return unwrap(this.client.raw.POST("/v1/admin/orgs/{org_id}/deposits", { params: { path: { org_id: orgId } }, body, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/admin/orgs/{org_id}/ledger`: the organization's ledger, newest first (cursor: the entry `id`). */
  ledger(orgId: string, query: ListQuery<"adminListOrgLedger"> = {}, options: RequestOptions = {}): PagePromise<Answer<"adminListOrgLedger">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) =>
        unwrap(
          this.client.raw.GET("/v1/admin/orgs/{org_id}/ledger", {
            params: { path: { org_id: orgId }, query: listQuery<Query<"adminListOrgLedger">>({ ...rest, after: cursor }) },
            ...this.client.requestInit(options),
          }),
        ),
      (entry) => entry.id,
      after,
    );
  }

  /** `GET /v1/admin/orgs/{org_id}/requests`: the organization's usage log, newest first (cursor: the record `id`). */
  requests(orgId: string, query: ListQuery<"adminListOrgRequests"> = {}, options: RequestOptions = {}): PagePromise<Answer<"adminListOrgRequests">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) =>
        unwrap(
          this.client.raw.GET("/v1/admin/orgs/{org_id}/requests", {
            params: { path: { org_id: orgId }, query: listQuery<Query<"adminListOrgRequests">>({ ...rest, after: cursor }) },
            ...this.client.requestInit(options),
          }),
        ),
      (record) => record.id,
      after,
    );
  }

  /** `GET /v1/admin/orgs/{org_id}/usage`: the organization's usage totals (by day, model, key or member), as `client.usage.summary` has them. */
  usage(orgId: string, query: Query<"adminGetOrgUsage"> = {}, options: RequestOptions = {}): Promise<Answer<"adminGetOrgUsage">> {
    return unwrap(this.client.raw.GET("/v1/admin/orgs/{org_id}/usage", { params: { path: { org_id: orgId }, query }, ...this.client.requestInit(options) }));
  }

  /** `PUT /v1/admin/orgs/{org_id}/limits`: the organization's own limits, overriding its tier's (D22). */
  setLimits(orgId: string, body: JsonBody<"adminSetOrgLimits">, options: RequestOptions = {}): Promise<Answer<"adminSetOrgLimits">> {
    return unwrap(this.client.raw.PUT("/v1/admin/orgs/{org_id}/limits", { params: { path: { org_id: orgId } }, body, ...this.client.requestInit(options) }));
  }

  /** `PUT /v1/admin/orgs/{org_id}/tier`: sets the organization's tier override (`{tier: null}` clears it). */
  setTier(orgId: string, body: JsonBody<"adminSetOrgTier">, options: RequestOptions = {}): Promise<Answer<"adminSetOrgTier">> {
    return unwrap(this.client.raw.PUT("/v1/admin/orgs/{org_id}/tier", { params: { path: { org_id: orgId } }, body, ...this.client.requestInit(options) }));
  }
}
