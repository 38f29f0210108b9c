/**
 * What the gateway offers and keeps (public or per account): `client.models` (catalog, recommendation),
 * `client.pricing` (prices per unit, tiers, capabilities), `client.gallery` (the account's outputs),
 * `client.files` (stored outputs) and `client.system` (health, readiness, metrics, the document).
 *
 * ```ts
 * const { data } = await client.models.list({ capability: "image" });
 * for await (const item of client.gallery.list()) console.log(item.job_id, item.url);
 * ```
 */
import { type APIClient, type RequestOptions, unwrap } from "../core.ts";
import { gatewayError } from "../errors.ts";
import { PagePromise } from "../pagination.ts";
import { type Answer, type ListQuery, listQuery, type Query } from "../types.ts";

/** `client.models`: the model catalog. */
export class Models {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/models`: the catalog, optionally by `capability` and `tier`. */
  list(query: Query<"listModels"> = {}, options: RequestOptions = {}): Promise<Answer<"listModels">> {
    return unwrap(this.client.raw.GET("/v1/models", { params: { query }, ...this.client.requestInit(options) }));
  }

  /** `GET /v1/models/recommend`: the model advised for an `agent` profile (`coding`, `chat`, `cheap`...). */
  recommend(query: Query<"recommendModel"> = {}, options: RequestOptions = {}): Promise<Answer<"recommendModel">> {
    return unwrap(this.client.raw.GET("/v1/models/recommend", { params: { query }, ...this.client.requestInit(options) }));
  }
}

/** `client.pricing`: prices and limits, the same for every caller. */
export class Pricing {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/pricing`: the price of each model per unit (USD). */
  get(options: RequestOptions = {}): Promise<Answer<"getPricing">> {
    return unwrap(this.client.raw.GET("/v1/pricing", this.client.requestInit(options)));
  }

  /** `GET /v1/credits/pricing`: the older shape of the price list, kept for existing callers. */
  legacy(options: RequestOptions = {}): Promise<Answer<"getLegacyPricing">> {
    return unwrap(this.client.raw.GET("/v1/credits/pricing", this.client.requestInit(options)));
  }

  /** `GET /v1/limits/tiers`: the tiers (D13): deposits needed and the limits of each. */
  tiers(options: RequestOptions = {}): Promise<Answer<"getTiers">> {
    return unwrap(this.client.raw.GET("/v1/limits/tiers", this.client.requestInit(options)));
  }

  /** `GET /v1/capabilities`: what each kind of call accepts (models, formats, bounds). */
  capabilities(options: RequestOptions = {}): Promise<Answer<"getCapabilities">> {
    return unwrap(this.client.raw.GET("/v1/capabilities", this.client.requestInit(options)));
  }
}

/** `client.gallery`: the account's finished outputs. */
export class Gallery {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/gallery`: outputs newest first (cursor: the item's `job_id`). Await for a page, iterate for all. */
  list(query: ListQuery<"listGallery"> = {}, options: RequestOptions = {}): PagePromise<Answer<"listGallery">> {
    const { after, ...rest } = query;
    return new PagePromise(
      (cursor) => unwrap(this.client.raw.GET("/v1/gallery", { params: { query: listQuery<Query<"listGallery">>({ ...rest, after: cursor }) }, ...this.client.requestInit(options) })),
      (item) => item.job_id,
      after,
    );
  }
}

/** `client.files`: stored outputs (`GET /v1/files/{key}`, public URLs, D8). */
export class Files {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /v1/files/{key}`: the file, body unread (`range` for part of it: 206). Throws `NotFoundError` for an unknown key. */
  async get(key: string, options: RequestOptions & { range?: string } = {}): Promise<Response> {
    const { range, ...rest } = options;
    const init = this.client.requestInit(range ? { ...rest, headers: { range, ...rest.headers } } : rest);
    const { error, response } = await this.client.raw.GET("/v1/files/{key}", { params: { path: { key } }, parseAs: "stream", ...init });
    if (!response.ok) throw gatewayError(response, error);
    return response;
  }
}

/** `client.system`: the gateway's own state. */
export class System {
  private readonly client: APIClient;

  constructor(client: APIClient) {
    this.client = client;
  }

  /** `GET /healthz`: liveness. */
  health(options: RequestOptions = {}): Promise<Answer<"health">> {
    return unwrap(this.client.raw.GET("/healthz", this.client.requestInit(options)));
  }

  /** `GET /readyz`: readiness (database and queue reachable). Throws `InternalServerError` (503) when not ready. */
  ready(options: RequestOptions = {}): Promise<Answer<"ready">> {
    return unwrap(this.client.raw.GET("/readyz", this.client.requestInit(options)));
  }

  /** `GET /metrics`: Prometheus text (needs the operator's `METRICS_TOKEN` as the client's key). */
  async metrics(options: RequestOptions = {}): Promise<string> {
    return (await unwrap(this.client.raw.GET("/metrics", { parseAs: "text", ...this.client.requestInit(options) }))) as string;
  }

  /** `GET /openapi.json`: the OpenAPI document these types are generated from. */
  openapi(options: RequestOptions = {}): Promise<Answer<"openapi">> {
    return unwrap(this.client.raw.GET("/openapi.json", this.client.requestInit(options)));
  }
}
