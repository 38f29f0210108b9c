/**
 * Route schemas of the usage log (D29): `GET /v1/requests`, `GET /v1/requests/{id}`, `GET /v1/usage`,
 * `GET /v1/usage.csv` and the FOCUS export `GET /v1/usage/export`.
 */
import type { TString } from "typebox";
import { AUTH_ERR, bool, errors, int, isoTime, JOB_STATUSES, LIST, nullable, num, obj, ok, oneOf, queryInt, route, str, usd } from "./common.ts";
import { LEDGER_ENTRY } from "./billing.ts";

const KINDS = ["speech", "music", "sfx", "voice_design", "voice_clone", "transcription", "audio_understanding", "chat", "image", "video"];
const MODE = oneOf(["live", "test"], "`live` (default) or `test`: records of test-mode keys show only with `test`.", { "x-error-message": "mode must be 'live' or 'test'." });
const TIME_BOUND = (what: string): TString =>
  str(`${what}: an ISO date (\`2025-03-01\`, a whole day) or an ISO instant with a zone (\`2025-03-01T12:00:00Z\`).`, { maxLength: 40, examples: ["2025-03-01"] });

const UNITS = obj(
  {
    characters: int("Speech: characters billed."),
    seconds: num("Music, sound effects and video: seconds."),
    images: int("Images."),
    input_tokens: int("Chat: input tokens, cached ones included."),
    output_tokens: int("Chat: output tokens."),
    cached_tokens: int("Chat: cached input tokens."),
    minutes: int("Transcription and audio understanding: billed (started) minutes."),
  },
  [],
  { description: "The units of the call, whichever apply (none for voice design and cloning)." },
);

const RECORD_FIELDS = {
  id: str("The request id (`req_...`), as sent in `X-Svc-Request-Id`."),
  object: oneOf(["usage.record"], "Always `usage.record`."),
  org_id: str("The organization charged."),
  user_id: nullable(str("The member who made the call: the key's creator or the session's user; null for calls from before organizations.")),
  key_id: nullable(str("The API key that made the call.")),
  model: str("Model id."),
  kind: oneOf(KINDS, "What the call was."),
  status: oneOf(JOB_STATUSES, "`processing` while a synchronous call runs, a job's status for a job; `failed` calls and `refunded` streams cost 0."),
  mode: oneOf(["live", "test"], "`test` for a test-mode key (no money moved)."),
  units: UNITS,
  cost_usd: nullable(usd("What the call cost (null while pending or processing)")),
  hold_usd: usd("What was held (for a test-mode key: would have been held)"),
  fallback_layer: int("0 when the first source served the call, 1 or more for a fallback source."),
  latency_ms: nullable(int("From the hold to the charge or release, ms (a stream of speech: to its first audio); null until then.")),
  job_id: nullable(str("The job, for image, video and stored audio calls.")),
  created_at: isoTime("When the call placed its hold."),
  realtime: bool("`true` for a realtime socket's record: one record per socket, whatever its length."),
};
const RECORD_REQUIRED = Object.keys(RECORD_FIELDS);
/** Fields of a realtime socket's record only (D42, D43). */
const REALTIME_FIELDS = {
  duration_ms: nullable(int("How long the socket was open, ms (null while open).")),
  contexts: nullable(int("Speech contexts the socket used (`multi-stream-input`: up to 5 at once); null for transcription.")),
  close_code: nullable(int("The WebSocket close code the socket ended with (1000 normal, 1001 shutdown, 1008 policy, 1011 upstream); null while open, or when the sweep settled a socket whose process died.")),
};
const RECORD = obj({ ...RECORD_FIELDS, ...REALTIME_FIELDS }, RECORD_REQUIRED);

/** The query of `GET /v1/requests` (also the operator's `GET /v1/admin/users/{user_id}/requests`). */
export const REQUESTS_QUERY = obj({
  limit: queryInt("Page size, 1 to 100 (default 20).", "^0*(100|[1-9][0-9]?)$", "limit must be an integer from 1 to 100.", { examples: ["20"] }),
  after: str("Cursor: the `id` of the last record of the previous page.", { maxLength: 200 }),
  model: str("Only this model.", { maxLength: 200 }),
  key_id: str("Only calls made with this key.", { maxLength: 200 }),
  user_id: str("Only calls made by this member.", { maxLength: 200 }),
  status: oneOf(JOB_STATUSES, "Only this status.", { "x-error-message": `status must be one of ${JOB_STATUSES.join(", ")}.` }),
  from: TIME_BOUND("Records from (UTC for a date)"),
  to: TIME_BOUND("Records before (a date includes that day, UTC)"),
  mode: MODE,
});
/** One page of usage records. */
export const REQUESTS_PAGE = LIST(RECORD, { has_more: bool("More records follow.") });

/** `GET /v1/requests`. */
export const listRequestsSchema = route({
  operationId: "listRequests",
  summary: "Usage records, newest first",
  description: "One record per paid call (every call that placed a hold, or for a test-mode key would have).",
  tags: ["billing"],
  access: "keyOrSession",
  query: REQUESTS_QUERY,
  responses: {
    200: ok("One page.", REQUESTS_PAGE),
    ...errors({ 400: "`invalid_request` (limit outside 1-100, a bad status, mode or time)", ...AUTH_ERR }),
  },
});

/** `GET /v1/requests/{id}`. */
export const getRequestSchema = route({
  operationId: "getRequest",
  summary: "One usage record and its ledger entries",
  tags: ["billing"],
  access: "keyOrSession",
  params: obj({ id: str("Request id.", { maxLength: 200 }) }, ["id"]),
  responses: {
    200: ok(
      "The record and its ledger entries, oldest first (none for a test-mode key).",
      obj({ ...RECORD_FIELDS, ...REALTIME_FIELDS, ledger: { type: "array", items: LEDGER_ENTRY, description: "The call's ledger entries." } }, [...RECORD_REQUIRED, "ledger"]),
    ),
    ...errors({ ...AUTH_ERR, 404: "`request_not_found` (unknown, or another account's)" }),
  },
});

/** How a usage summary groups; `user` is the older name of `member`. */
const GROUP_BYS = ["day", "model", "key", "member", "user"] as const;

/** The query of `GET /v1/usage` and its CSV (also the operator's `GET /v1/admin/users/{user_id}/usage`). */
export const SUMMARY_QUERY = obj({
  from: TIME_BOUND("From (default: 30 days ago; a date starts at midnight in `tz`)"),
  to: TIME_BOUND("Until, exclusive (default: now; a date includes that day in `tz`)"),
  group_by: oneOf(GROUP_BYS, "Group by day in `tz` (default), model, key or `member` (the member's user id; `user` is the same grouping under its older name).", {
    "x-error-message": "group_by must be 'day', 'model', 'key' or 'member'.",
  }),
  tz: str("IANA time zone of the days and of date bounds (default `UTC`).", { maxLength: 64, examples: ["Europe/Berlin"] }),
  mode: MODE,
});

/** The body of `GET /v1/usage`. */
export const USAGE_SUMMARY = obj(
  {
    object: oneOf(["usage.summary"], "Always `usage.summary`."),
    group_by: oneOf(GROUP_BYS, "How the groups were made (as asked)."),
    data: {
      type: "array",
      description: "Groups in ascending order.",
      items: obj(
        {
          group: str("`YYYY-MM-DD` in `tz` (day), the model id (model), the key id (key; `none` for calls made without a key) or the member's user id (member; `none` for records that name no member)."),
          requests: int("Paid calls."),
          cost_usd: usd("What they cost"),
          units: UNITS,
        },
        ["group", "requests", "cost_usd", "units"],
      ),
    },
    total: obj({ requests: int("Paid calls."), cost_usd: usd("What they cost") }, ["requests", "cost_usd"]),
  },
  ["object", "group_by", "data", "total"],
);

/** `GET /v1/usage`. */
export const getUsageSchema = route({
  operationId: "getUsage",
  summary: "Usage summed by day, model, key or member",
  tags: ["billing"],
  access: "keyOrSession",
  query: SUMMARY_QUERY,
  responses: {
    200: ok("The summary.", USAGE_SUMMARY),
    ...errors({ 400: "`invalid_request` (an unknown time zone, a bad time or group_by, `from` after `to`)", ...AUTH_ERR }),
  },
});

/** `GET /v1/usage.csv`. */
export const getUsageCsvSchema = route({
  operationId: "getUsageCsv",
  summary: "Usage summed by day, model, key or member, as CSV",
  description: "The same groups as `GET /v1/usage`: a header row `group,requests,cost_usd,characters,seconds,images,input_tokens,output_tokens,cached_tokens,minutes`, then one row per group.",
  tags: ["billing"],
  access: "keyOrSession",
  query: SUMMARY_QUERY,
  responses: {
    200: { description: "The CSV.", content: { "text/csv": { schema: { type: "string" } } } },
    ...errors({ 400: "`invalid_request` (an unknown time zone, a bad time or group_by, `from` after `to`)", ...AUTH_ERR }),
  },
});

/** The query of `GET /v1/usage/export`. */
export const EXPORT_QUERY = obj(
  {
    format: oneOf(["focus"], "`focus`: the FinOps FOCUS 1.2 cost and usage dataset, as CSV.", { "x-error-message": "format must be 'focus'." }),
    from: str("The first UTC day (`YYYY-MM-DD`; default: the first day of the current UTC month).", {
      pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
      "x-error-message": "from must be a UTC date (YYYY-MM-DD).",
      examples: ["2025-03-01"],
    }),
    to: str("The last UTC day, included (`YYYY-MM-DD`; default: today, UTC). At most 366 days from `from`.", {
      pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
      "x-error-message": "to must be a UTC date (YYYY-MM-DD).",
      examples: ["2025-03-31"],
    }),
    mode: oneOf(["live", "test"], "`live` (default) or `test`: the calls of test-mode keys, which billed nothing (`BilledCost` 0, `ListCost` what they would have cost).", {
      "x-error-message": "mode must be 'live' or 'test'.",
    }),
  },
  ["format"],
);

/** `GET /v1/usage/export`. */
export const getUsageExportSchema = route({
  operationId: "getUsageExport",
  summary: "Usage as a FOCUS 1.2 cost and usage dataset (CSV)",
  description: [
    "The organization's charged calls as the FinOps Open Cost and Usage Specification (FOCUS) 1.2 dataset: one row per UTC day, model, member and key, so each row's `Tags` are exact. ",
    "Columns: the 21 mandatory FOCUS columns (`BilledCost`, `BillingAccountId`, `BillingAccountName`, `BillingCurrency`, `BillingPeriodEnd`, `BillingPeriodStart`, `ChargeCategory`, `ChargeClass`, `ChargeDescription`, `ChargePeriodEnd`, `ChargePeriodStart`, `ContractedCost`, `EffectiveCost`, `InvoiceIssuerName`, `ListCost`, `PricingQuantity`, `PricingUnit`, `ProviderName`, `PublisherName`, `ServiceCategory`, `ServiceName`), ",
    "then `ChargeFrequency`, `ConsumedQuantity`, `ConsumedUnit`, `ServiceSubcategory`, `SkuId`, `SkuPriceId`, `Tags` and the custom `x_Requests` (calls in the row), in alphabetical order with `x_Requests` last. ",
    "Costs are USD decimal text (at most 6 decimals): `BilledCost` and `EffectiveCost` what the ledger charged, `ListCost` and `ContractedCost` the catalog price of the same calls (the same amount: no discounts). ",
    "Date/times are UTC, `YYYY-MM-DDTHH:mm:ssZ`: `ChargePeriodStart` a UTC midnight, `ChargePeriodEnd` the next; the billing period is the UTC calendar month. ",
    "`Tags` is a JSON object: `gateway/org_id`, `gateway/user_id` (the member; null for calls that name none) and `gateway/key_id` (null for calls made without a key). `SkuId` is the model id (its `/v1/pricing` row). ",
    "Only calls whose charge was kept count (failed, refunded, expired and unfinished calls charged nothing). An empty field is null.",
  ].join(""),
  tags: ["billing"],
  access: "keyOrSession",
  query: EXPORT_QUERY,
  responses: {
    200: { description: "The CSV: a header row, then one row per day, model, member and key.", content: { "text/csv": { schema: { type: "string" } } } },
    ...errors({ 400: "`invalid_request` (a format other than `focus`, a date that is not `YYYY-MM-DD`, `from` after `to`, more than 366 days)", ...AUTH_ERR }),
  },
});
