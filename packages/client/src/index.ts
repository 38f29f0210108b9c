/**
 * A typed client of the gateway's HTTP API: openapi-fetch over the types generated from the OpenAPI
 * document (`schema.ts`, `npm run generate:client`). Paths, parameters, bodies and JSON answers are
 * checked by the TypeScript compiler, so a drift between the document and a caller breaks the build.
 *
 * ```ts
 * const api = createClient("http://localhost:8080", process.env.API_KEY);
 * const { data, error } = await api.GET("/v1/auth/me");
 * ```
 *
 * On top of it: `submitAndWait` / `waitForJob` follow an image or video job to its end and
 * `downloadOutput` saves its files (`jobs.ts`, `download.ts`); `listJobs`, `cancelJob` (D30) and
 * `listRequests`, `getUsage`, `getUsageCsv` (D29) call routes the generated types may not have yet
 * (`loose.ts`); every helper throws `GatewayError` (the D1 error) for a refused call.
 */
import createFetchClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths } from "./schema.ts";

export type { components, operations, paths } from "./schema.ts";

/** The client type: `GET`, `POST`, `PUT`, `DELETE`... keyed by the documented paths. */
export type GatewayClient = Client<paths>;

/**
 * A client for the gateway at `baseUrl` (no trailing slash needed). With `apiKey` (an API key or, on the
 * account endpoints, a session token) every call sends `Authorization: Bearer <apiKey>`. Calls resolve to
 * `{data, error, response}`: `data` is the parsed 2xx answer, `error` the D1 error body of a 4xx/5xx.
 * `options` are passed to openapi-fetch (for example `fetch`, or `headers` as a plain record).
 */
export function createClient(baseUrl: string, apiKey?: string, options: Omit<ClientOptions, "baseUrl"> = {}): GatewayClient {
  const own = options.headers as Record<string, string> | undefined;
  const headers = apiKey ? { ...own, authorization: `Bearer ${apiKey}` } : own;
  return createFetchClient<paths>({ ...options, baseUrl: baseUrl.replace(/\/+$/, ""), headers });
}

export { GatewayError, gatewayError, retryAfterSeconds } from "./errors.ts";
export {
  cancelJob,
  getJob,
  isTerminal,
  listJobs,
  sseEvents,
  submitAndWait,
  TERMINAL_STATUSES,
  waitForJob,
  type JobList,
  type JobListQuery,
  type JobStatus,
  type JobSubmitBody,
  type JobSubmitPath,
  type MediaJob,
  type ServerSentEvent,
  type SubmitOptions,
  type WaitOptions,
} from "./jobs.ts";
export { downloadOutput, outputPaths, type DownloadOptions } from "./download.ts";
export { looseCall, type LooseInit } from "./loose.ts";
export {
  getUsage,
  getUsageCsv,
  listRequests,
  type RequestList,
  type RequestListQuery,
  type UsageQuery,
  type UsageRecord,
  type UsageSummary,
  type UsageUnits,
} from "./usage.ts";
