/**
 * The usage log (D29): one record per paid call, listed by `GET /v1/requests` and summed by
 * `GET /v1/usage` (JSON) and `GET /v1/usage.csv`. Shapes as D29 has them; the calls go through the
 * typed client with loose paths until the generated types include these routes (`loose.ts`).
 */
import type { GatewayClient } from "./index.ts";
import { looseCall } from "./loose.ts";

/** Units of a usage record or group: whichever apply to the call's kind (D29). */
export interface UsageUnits {
  characters?: number;
  seconds?: number;
  images?: number;
  input_tokens?: number;
  output_tokens?: number;
  cached_tokens?: number;
  minutes?: number;
}

/** One usage record (D29): `id` is the request id (`req_...`), `cost_usd` what the ledger charged. */
export interface UsageRecord {
  id: string;
  key_id: string | null;
  model: string;
  kind: string;
  status: string;
  units: UsageUnits;
  cost_usd: number;
  fallback_layer: number;
  latency_ms: number | null;
  job_id: string | null;
  created_at: string;
  mode?: "live" | "test";
}

/** A page of `GET /v1/requests`, newest first. */
export interface RequestList {
  object: "list";
  data: UsageRecord[];
  has_more: boolean;
}

/** Filters of `GET /v1/requests`; `after` is the `id` of the last record of the previous page. */
export interface RequestListQuery {
  limit?: number;
  after?: string;
  model?: string;
  key_id?: string;
  status?: string;
  from?: string;
  to?: string;
}

/** Filters of `GET /v1/usage` and `/v1/usage.csv`: ISO dates or instants, an IANA zone (default UTC). */
export interface UsageQuery {
  from?: string;
  to?: string;
  group_by?: "day" | "model" | "key";
  tz?: string;
  mode?: "test";
}

/** `GET /v1/usage` (D29). `group` is `YYYY-MM-DD` in `tz`, a model id or a key id. */
export interface UsageSummary {
  object: "usage.summary";
  group_by: "day" | "model" | "key";
  data: { group: string; requests: number; cost_usd: number; units: UsageUnits }[];
  total: { requests: number; cost_usd: number };
}

/** `GET /v1/requests` (D29). Throws a {@link GatewayError} on a non-2xx answer. */
export async function listRequests(client: GatewayClient, query: RequestListQuery = {}, signal?: AbortSignal): Promise<RequestList> {
  const { data } = await looseCall(client, "GET", "/v1/requests", { query: { ...query }, signal });
  return data as RequestList;
}

/** `GET /v1/usage` (D29): totals per day, model or key over `from`..`to` (default the last 30 days). */
export async function getUsage(client: GatewayClient, query: UsageQuery = {}, signal?: AbortSignal): Promise<UsageSummary> {
  const { data } = await looseCall(client, "GET", "/v1/usage", { query: { ...query }, signal });
  return data as UsageSummary;
}

/** `GET /v1/usage.csv` (D29): the same groups as CSV text (`group,requests,cost_usd,<units>...`). */
export async function getUsageCsv(client: GatewayClient, query: UsageQuery = {}, signal?: AbortSignal): Promise<string> {
  const { data } = await looseCall(client, "GET", "/v1/usage.csv", { query: { ...query }, parseAs: "text", headers: { accept: "text/csv" }, signal });
  return data as string;
}
