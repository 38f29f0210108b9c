/**
 * Budgets (D44): `client.budgets` lists, makes, reads, changes and deletes the organization's budgets: an
 * amount per calendar window (`day`, `week` from Monday, `month`, or `total`) in an IANA time zone, for the
 * whole organization, one member or one API key, that either refuses calls past it (`block`: 402
 * `budget_exceeded`, `BillingError`) or only sends `budget.threshold` events (`alert`). Each answer
 * carries the current window (`window_start`, `window_end`, null for `total`), `spent_usd` and
 * `remaining_usd`. A key's spend limit (D34) is listed as a key budget of action `block`.
 *
 * Owners and admins change budgets; members and viewers read them (a change throws
 * `PermissionDeniedError`, 403 `forbidden_role`). A session acts for the organization of `X-Svc-Org`
 * (`client.withOrg`).
 *
 * ```ts
 * const me = await client.auth.me();
 * const daily = await client.budgets.create({ scope: { type: "org", id: me.org_id }, amount_usd: 10, period: "day", timezone: "Asia/Tokyo" });
 * await client.budgets.update(daily.id, { thresholds: [50, 90] });
 * for (const b of (await client.budgets.list()).data) console.log(b.id, b.spent_usd, b.remaining_usd);
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import type { Answer, JsonBody } from "../types.ts";

/** A budget as the gateway answers it. */
export type Budget = Answer<"getBudget">;

/** `client.budgets`: the organization's budgets (D44). */
export class Budgets {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/budgets`: `{object: "list", data}` of every budget, the keys' spend limits included. Not paginated. */
  list(options: RequestOptions = {}): Promise<Answer<"listBudgets">> {
    return unwrap(this.client.raw.GET("/v1/budgets", this.client.requestInit(options)));
  }

  /**
   * `POST /v1/budgets {scope, amount_usd, period, timezone?, action?, thresholds?}`: a new budget (201);
   * `timezone` defaults to `UTC`, `action` to `block`, `thresholds` to `[50, 80, 100]`. Throws
   * `BadRequestError` (400 `invalid_request`: a field, an unknown zone, a scope not of the organization),
   * `PermissionDeniedError` (403 `forbidden_role`). Not retried.
   */
  create(body: JsonBody<"createBudget">, options: RequestOptions = {}): Promise<Answer<"createBudget">> {
    return unwrap(this.client.raw.POST("/v1/budgets", { body, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/budgets/{budget_id}`: one budget. Throws `NotFoundError` (404 `budget_not_found`). */
  get(budgetId: string, options: RequestOptions = {}): Promise<Answer<"getBudget">> {
    return unwrap(this.client.raw.GET("/v1/budgets/{budget_id}", { params: { path: { budget_id: budgetId } }, ...this.client.requestInit(options) }));
  }

  /**
   * `PATCH /v1/budgets/{budget_id}`: changes the fields given (`amount_usd`, `period`, `timezone`, `action`,
   * `thresholds`; the scope stays). A new period or zone counts the new current window. Not retried.
   */
  update(budgetId: string, body: JsonBody<"updateBudget">, options: RequestOptions = {}): Promise<Answer<"updateBudget">> {
    return unwrap(this.client.raw.PATCH("/v1/budgets/{budget_id}", { params: { path: { budget_id: budgetId } }, body, ...this.client.requestInit(options) }));
  }

  /** `DELETE /v1/budgets/{budget_id}`: `{id, object, deleted: true}`; on a key's spend limit, removes the limit. */
  delete(budgetId: string, options: RequestOptions = {}): Promise<Answer<"deleteBudget">> {
    return unwrap(this.client.raw.DELETE("/v1/budgets/{budget_id}", { params: { path: { budget_id: budgetId } }, ...this.client.requestInit(options) }));
  }
}
