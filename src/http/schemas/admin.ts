/**
 * Route schemas of the operator API (D9, D21, D22, D25; issue 15 point 3): accounts, deposits, tier and
 * limit overrides, one account's ledger, requests and usage, upstream health and revenue. Every operation
 * needs `Authorization: Bearer $GATEWAY_ADMIN_TOKEN` (401 `auth_error` otherwise, D21) and answers 404
 * `not_found` when no token is configured (the operator API is then off).
 *
 * The bodies of the write operations are typed for the client but keep the service's own messages
 * (`x-error-message`): accounts/admin.ts validates them again and is the reference.
 */
import { DEPOSIT_BODY, LIMITS_BODY } from "../../contracts/admin.ts";
import { MAX_TIER } from "../../catalog/tiers.ts";
import { LEDGER_ENTRY } from "./billing.ts";
import {
  arr,
  bool,
  errors,
  int,
  isoTime,
  json,
  LIST,
  nullable,
  num,
  obj,
  ok,
  oneOf,
  PAGE_QUERY,
  queryInt,
  ref,
  route,
  str,
  usd,
} from "./common.ts";
import { REQUESTS_PAGE, REQUESTS_QUERY, SUMMARY_QUERY, USAGE_SUMMARY } from "./usage.ts";

/** The errors every operator operation can answer. */
const OPERATOR_ERR = {
  401: "`auth_error` (no operator token, a wrong one, or a customer's key)",
  404: "`not_found` (the operator API is off: `GATEWAY_ADMIN_TOKEN` is not set)",
};
/** ... and those of an operation on one account. */
const ACCOUNT_ERR = {
  ...OPERATOR_ERR,
  404: "`user_not_found` (no such account), or `not_found` (the operator API is off)",
};

const USER_PARAMS = obj({ user_id: str("The user's id (`usr_...`); the operation acts on the user's personal organization.", { maxLength: 200 }) }, ["user_id"]);
const ORG_PARAMS = obj({ org_id: str("The organization's id (`org_...`).", { maxLength: 200 }) }, ["org_id"]);
/** ... and those of an operation on one organization. */
const ORG_ERR = { ...OPERATOR_ERR, 404: "`org_not_found` (no such organization), or `not_found` (the operator API is off)" };

const ACCOUNT_FIELDS = {
  user_id: str("User id."),
  email: str("Email (stored lowercased)."),
  org_id: str("The user's personal organization, whose balance, tier and keys these are."),
  balance_usd: usd("Balance"),
  tier: int("Effective tier, 0 to 4 (the override when set, else by deposits)."),
  tier_name: str("Name of the effective tier."),
  total_deposits_usd: usd("Cumulative deposits"),
  created_at: isoTime("When the account was registered."),
  tier_override: nullable(int("The operator's tier override, or null.")),
  has_custom_limits: bool("Whether the operator overrides some limits of the account."),
  keys: int("API keys of the account (live and test)."),
  last_key_used_at: nullable(isoTime("When one of its keys was last used (written at most once a minute per key), or null.")),
};
const ACCOUNT = obj(ACCOUNT_FIELDS, Object.keys(ACCOUNT_FIELDS));

const { user_id: _u, email: _e, ...ORG_BASE } = ACCOUNT_FIELDS;
const ORG_FIELDS = {
  ...ORG_BASE,
  org_id: str("Organization id (`org_...`)."),
  name: nullable(str("The organization's name (a personal organization: its owner's email).")),
  created_at: isoTime("When the organization was made."),
  members: int("Members of the organization."),
};
const ORG = obj(ORG_FIELDS, Object.keys(ORG_FIELDS));

const TIER_BODY = obj(
  {
    tier: {
      type: ["integer", "null"],
      minimum: 0,
      maximum: MAX_TIER,
      description: `The tier, 0 to ${MAX_TIER}, or null to clear the override.`,
      "x-error-message": `tier must be an integer from 0 to ${MAX_TIER}, or null.`,
    },
  },
  ["tier"],
);

const LIMITS_OVERRIDE = obj({}, [], {
  description: "The account's limit overrides: the tier-row fields set by the operator; `{}` when none.",
  additionalProperties: true,
});

/** `GET /v1/admin/users`. */
export const listAccountsSchema = route({
  operationId: "adminListAccounts",
  summary: "Find accounts by email prefix or id",
  description:
    "Accounts newest first. `q` matches an exact user id or the start of the email, case-insensitive (`ali` finds `alice@example.com`); without `q`, every account. A prefix, not a substring: it is an index range on both databases.",
  tags: ["operator"],
  access: "admin",
  query: obj({
    q: str("A user id, or the start of an email.", { maxLength: 254, examples: ["alice@"] }),
    limit: queryInt("Page size, 1 to 100 (default 20).", "^0*(100|[1-9][0-9]?)$", "limit must be an integer from 1 to 100.", { examples: ["20"] }),
    after: str("Cursor: the `user_id` of the last account of the previous page.", { maxLength: 200 }),
  }),
  responses: {
    200: ok("One page.", LIST(ACCOUNT, { has_more: bool("More accounts follow.") })),
    ...errors({ 400: "`invalid_request` (limit outside 1-100, q over 254 characters)", ...OPERATOR_ERR }),
  },
});

/** `GET /v1/admin/users/{user_id}`. */
export const getAccountSchema = route({
  operationId: "adminGetAccount",
  summary: "One account: balance, tier, overrides and effective limits",
  tags: ["operator"],
  access: "admin",
  params: USER_PARAMS,
  responses: {
    200: ok(
      "The account.",
      obj(
        {
          object: oneOf(["admin.account"], "Always `admin.account`."),
          ...ACCOUNT_FIELDS,
          limits_override: LIMITS_OVERRIDE,
          limits: { ...ref("TierRow"), description: "The effective limits: the tier row with the overrides applied (as `GET /v1/auth/limits`)." },
        },
        ["object", ...Object.keys(ACCOUNT_FIELDS), "limits_override", "limits"],
      ),
    ),
    ...errors(ACCOUNT_ERR),
  },
});

/** `GET /v1/admin/users/{user_id}/ledger`. */
export const accountLedgerSchema = route({
  operationId: "adminListAccountLedger",
  summary: "One account's ledger, newest first",
  description: "What `GET /v1/billing/ledger` shows the account.",
  tags: ["operator"],
  access: "admin",
  params: USER_PARAMS,
  query: PAGE_QUERY,
  responses: {
    200: ok("One page.", LIST(LEDGER_ENTRY, { has_more: bool("More entries follow.") })),
    ...errors({ 400: "`invalid_request` (limit outside 1-100)", ...ACCOUNT_ERR }),
  },
});

/** `GET /v1/admin/users/{user_id}/requests`. */
export const accountRequestsSchema = route({
  operationId: "adminListAccountRequests",
  summary: "One account's usage records, newest first",
  description: "What `GET /v1/requests` shows the account, with the same filters.",
  tags: ["operator"],
  access: "admin",
  params: USER_PARAMS,
  query: REQUESTS_QUERY,
  responses: {
    200: ok("One page.", REQUESTS_PAGE),
    ...errors({ 400: "`invalid_request` (limit outside 1-100, a bad status, mode or time)", ...ACCOUNT_ERR }),
  },
});

/** `GET /v1/admin/users/{user_id}/usage`. */
export const accountUsageSchema = route({
  operationId: "adminGetAccountUsage",
  summary: "One account's usage summed by day, model or key",
  description: "What `GET /v1/usage` shows the account, with the same filters.",
  tags: ["operator"],
  access: "admin",
  params: USER_PARAMS,
  query: SUMMARY_QUERY,
  responses: {
    200: ok("The summary.", USAGE_SUMMARY),
    ...errors({ 400: "`invalid_request` (an unknown time zone, a bad time or group_by, `from` after `to`)", ...ACCOUNT_ERR }),
  },
});

/** `POST /v1/admin/users/{user_id}/deposits`. */
export const depositSchema = route({
  operationId: "adminDeposit",
  summary: "Credit an account (a deposit)",
  description: "Adds a `deposit` ledger entry; cumulative deposits raise the tier (10, 50, 250 and 1000 USD for tiers 1 to 4).",
  tags: ["operator"],
  access: "admin",
  params: USER_PARAMS,
  body: json(DEPOSIT_BODY),
  responses: {
    200: ok(
      "The account after the deposit.",
      obj(
        {
          user_id: str("User id."),
          org_id: str("The user's personal organization, credited."),
          balance_usd: usd("Balance"),
          total_deposits_usd: usd("Cumulative deposits"),
          tier: int("Effective tier."),
        },
        ["user_id", "org_id", "balance_usd", "total_deposits_usd", "tier"],
      ),
    ),
    ...errors({ 400: "`invalid_request` (a non-positive, non-numeric or too large amount, a bad reference)", ...ACCOUNT_ERR }),
  },
});

/** `PUT /v1/admin/users/{user_id}/tier`. */
export const setTierSchema = route({
  operationId: "adminSetTier",
  summary: "Set or clear an account's tier override",
  description: "The override wins over deposits until cleared with `{\"tier\": null}`.",
  tags: ["operator"],
  access: "admin",
  params: USER_PARAMS,
  body: json(TIER_BODY),
  responses: {
    200: ok(
      "The tier now in force.",
      obj(
        { user_id: str("User id."), org_id: str("The user's personal organization."), tier: int("Effective tier."), tier_override: nullable(int("The override, or null.")) },
        ["user_id", "org_id", "tier", "tier_override"],
      ),
    ),
    ...errors({ 400: "`invalid_request` (a tier outside 0-4)", ...ACCOUNT_ERR }),
  },
});

/** `PUT /v1/admin/users/{user_id}/limits`. */
export const setLimitsSchema = route({
  operationId: "adminSetLimits",
  summary: "Override single limits of an account",
  description:
    "Any subset of the tier-row fields; each is merged into the account's overrides, `null` drops one. `audio_concurrent_per_provider` maps pools (`host_1`, `host_2`, `alpha`, `beta`, `host_3`) to counts. An unknown field is refused.",
  tags: ["operator"],
  access: "admin",
  params: USER_PARAMS,
  body: json(LIMITS_BODY),
  responses: {
    200: ok(
      "The overrides now in force.",
      obj({ user_id: str("User id."), org_id: str("The user's personal organization."), limits_override: LIMITS_OVERRIDE }, ["user_id", "org_id", "limits_override"]),
    ),
    ...errors({ 400: "`invalid_request` (an unknown field or a bad value)", ...ACCOUNT_ERR }),
  },
});

/** `GET /v1/admin/orgs` (D41). */
export const listOrgsSchema = route({
  operationId: "adminListOrgs",
  summary: "Find organizations by id or name prefix",
  description: "Organizations newest first. `q` matches an exact organization id or the start of the name, case-insensitive (personal organizations are named after their owner's email); without `q`, every organization.",
  tags: ["operator"],
  access: "admin",
  query: obj({
    q: str("An organization id, or the start of a name.", { maxLength: 254 }),
    limit: queryInt("Page size, 1 to 100 (default 20).", "^0*(100|[1-9][0-9]?)$", "limit must be an integer from 1 to 100."),
    after: str("Cursor: the `org_id` of the last organization of the previous page.", { maxLength: 200 }),
  }),
  responses: {
    200: ok("One page.", LIST(ORG, { has_more: bool("More organizations follow.") })),
    ...errors({ 400: "`invalid_request` (limit outside 1-100, q over 254 characters)", ...OPERATOR_ERR }),
  },
});

/** `GET /v1/admin/orgs/{org_id}` (D41). */
export const getOrgSchema = route({
  operationId: "adminGetOrg",
  summary: "One organization: balance, tier, members, overrides and effective limits",
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  responses: {
    200: ok(
      "The organization.",
      obj(
        {
          object: oneOf(["admin.org"], "Always `admin.org`."),
          ...ORG_FIELDS,
          members_list: arr(
            obj(
              { user_id: str("User id."), email: str("Email."), role: oneOf(["owner", "admin", "member", "viewer"], "Role."), created_at: isoTime("When the user joined.") },
              ["user_id", "email", "role", "created_at"],
            ),
            "The members, oldest first.",
          ),
          limits_override: LIMITS_OVERRIDE,
          limits: { ...ref("TierRow"), description: "The effective limits: the tier row with the overrides applied (as `GET /v1/auth/limits`)." },
        },
        ["object", ...Object.keys(ORG_FIELDS), "members_list", "limits_override", "limits"],
      ),
    ),
    ...errors(ORG_ERR),
  },
});

/** `GET /v1/admin/orgs/{org_id}/ledger` (D41). */
export const orgLedgerSchema = route({
  operationId: "adminListOrgLedger",
  summary: "One organization's ledger, newest first",
  description: "What `GET /v1/billing/ledger` shows the organization.",
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  query: PAGE_QUERY,
  responses: {
    200: ok("One page.", LIST(LEDGER_ENTRY, { has_more: bool("More entries follow.") })),
    ...errors({ 400: "`invalid_request` (limit outside 1-100)", ...ORG_ERR }),
  },
});

/** `GET /v1/admin/orgs/{org_id}/requests` (D41). */
export const orgRequestsSchema = route({
  operationId: "adminListOrgRequests",
  summary: "One organization's usage records, newest first",
  description: "What `GET /v1/requests` shows the organization, with the same filters.",
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  query: REQUESTS_QUERY,
  responses: {
    200: ok("One page.", REQUESTS_PAGE),
    ...errors({ 400: "`invalid_request` (limit outside 1-100, a bad status, mode or time)", ...ORG_ERR }),
  },
});

/** `GET /v1/admin/orgs/{org_id}/usage` (D41). */
export const orgUsageSchema = route({
  operationId: "adminGetOrgUsage",
  summary: "One organization's usage summed by day, model, key or member",
  description: "What `GET /v1/usage` shows the organization, with the same filters.",
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  query: SUMMARY_QUERY,
  responses: {
    200: ok("The summary.", USAGE_SUMMARY),
    ...errors({ 400: "`invalid_request` (an unknown time zone, a bad time or group_by, `from` after `to`)", ...ORG_ERR }),
  },
});

/** `POST /v1/admin/orgs/{org_id}/deposits` (D41). */
export const orgDepositSchema = route({
  operationId: "adminOrgDeposit",
  summary: "Credit an organization (a deposit)",
  description: "Adds a `deposit` ledger entry; cumulative deposits raise the tier (10, 50, 250 and 1000 USD for tiers 1 to 4).",
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  body: json(DEPOSIT_BODY),
  responses: {
    200: ok(
      "The organization after the deposit.",
      obj(
        { org_id: str("Organization id."), balance_usd: usd("Balance"), total_deposits_usd: usd("Cumulative deposits"), tier: int("Effective tier.") },
        ["org_id", "balance_usd", "total_deposits_usd", "tier"],
      ),
    ),
    ...errors({ 400: "`invalid_request` (a non-positive, non-numeric or too large amount, a bad reference)", ...ORG_ERR }),
  },
});

/** `PUT /v1/admin/orgs/{org_id}/tier` (D41). */
export const setOrgTierSchema = route({
  operationId: "adminSetOrgTier",
  summary: "Set or clear an organization's tier override",
  description: "The override wins over deposits until cleared with `{\"tier\": null}`.",
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  body: json(TIER_BODY),
  responses: {
    200: ok(
      "The tier now in force.",
      obj({ org_id: str("Organization id."), tier: int("Effective tier."), tier_override: nullable(int("The override, or null.")) }, ["org_id", "tier", "tier_override"]),
    ),
    ...errors({ 400: "`invalid_request` (a tier outside 0-4)", ...ORG_ERR }),
  },
});

/** `PUT /v1/admin/orgs/{org_id}/limits` (D41). */
export const setOrgLimitsSchema = route({
  operationId: "adminSetOrgLimits",
  summary: "Override single limits of an organization",
  description: "As `PUT /v1/admin/users/{user_id}/limits`, for the organization.",
  tags: ["operator"],
  access: "admin",
  params: ORG_PARAMS,
  body: json(LIMITS_BODY),
  responses: {
    200: ok("The overrides now in force.", obj({ org_id: str("Organization id."), limits_override: LIMITS_OVERRIDE }, ["org_id", "limits_override"])),
    ...errors({ 400: "`invalid_request` (an unknown field or a bad value)", ...ORG_ERR }),
  },
});

/** `GET /v1/admin/upstreams`. */
export const listUpstreamsSchema = route({
  operationId: "adminListUpstreams",
  summary: "Upstream sources: circuit, error rate and latency",
  description:
    "One row per configured source (`UPSTREAMS`, then `TEXT_UPSTREAMS`), this process's view. Counts and latencies cover the last `window_s` seconds; `last_error` is the latest failure of any age. Keys and URLs are never shown. An empty list: every family is served by the simulator.",
  tags: ["operator"],
  access: "admin",
  responses: {
    200: ok(
      "The sources.",
      LIST(
        obj(
          {
            name: str("The source's name."),
            protocol: str("`elevenlabs`, `minimax`, `fal`, `bfl` or `openai`."),
            families: arr(str("A family."), "Families it serves, in order of preference for them."),
            circuit: oneOf(["closed", "open", "half_open"], "`open` after 5 consecutive retryable failures; `half_open` once the 30 s are over and the next call is the trial."),
            in_flight: int("Calls running now."),
            successes: int("Calls that succeeded in the window."),
            failures: int("Calls that failed in the window (refusals by the gateway itself excluded)."),
            error_rate: nullable(num("failures / (successes + failures) in the window, 0 to 1; null without a call.")),
            p50_ms: nullable(int("Median duration of the window's successful calls, ms; null without one.")),
            p95_ms: nullable(int("95th percentile (nearest rank) of the same durations, ms; null without one.")),
            window_s: int("The window, seconds."),
            last_error: nullable(
              obj(
                {
                  code: str("`model_not_found` (the source has no such upstream model or endpoint: the family's next source is tried, the circuit stays closed), `http_<status>` (for example `http_503`), `timeout`, `network_error`, `malformed_answer`, `content_rejected`, `voice_unavailable`, `refused`, `upstream_error` or `internal_error`."),
                  message: str("What failed, on one line, at most 200 characters; never a key; a URL is cut to its path."),
                  at: isoTime("When it failed."),
                },
                ["code", "message", "at"],
                { description: "The source's latest failed call since this process started, or null." },
              ),
            ),
          },
          ["name", "protocol", "families", "circuit", "in_flight", "successes", "failures", "error_rate", "p50_ms", "p95_ms", "window_s", "last_error"],
        ),
      ),
    ),
    ...errors(OPERATOR_ERR),
  },
});

const COST_BY_BASIS = obj(
  {
    reported_usd: usd("Jobs whose source reported what it charged"),
    list_price_usd: usd("Jobs served by a real source that reports nothing: the provider's list price of what was delivered"),
    catalog_usd: usd("Synchronous calls: an estimate, the charge divided by the catalog markup (nothing is recorded per call)"),
  },
  ["reported_usd", "list_price_usd", "catalog_usd"],
);
const REVENUE_FIELDS = {
  day: nullable(str("`YYYY-MM-DD` in `tz`; null when not grouped by day.")),
  model: nullable(str("Model id; null when not grouped by model.")),
  requests: int("Live paid calls."),
  revenue_usd: usd("What customers were charged (live mode; equals the ledger's charges less refunds)"),
  upstream_cost_usd: nullable(usd("Upstream cost of the calls with a cost figure; null when none has one")),
  margin_usd: nullable(usd("Revenue of the calls with a cost figure minus that cost; null when none has one")),
  uncosted_revenue_usd: usd("Revenue of calls without a cost figure (simulator-served jobs, music, sound effects, voices, chat): not in the margin"),
  upstream_cost_by_basis: COST_BY_BASIS,
};
const REVENUE_ROW = obj(REVENUE_FIELDS, Object.keys(REVENUE_FIELDS));

/** `GET /v1/admin/revenue`. */
export const revenueSchema = route({
  operationId: "adminGetRevenue",
  summary: "Revenue against upstream cost per model and day",
  description:
    "Live revenue from the usage log, by the day (in `tz`) each call placed its hold, next to the upstream cost: what a job's source reported, else the list price recorded on the job; for synchronous calls, which record none, an estimate from the catalog's provider cost where the catalog states a markup (speech, transcription, understanding), else no figure. Calls without a figure are counted in `uncosted_revenue_usd` and left out of the margin.",
  tags: ["operator"],
  access: "admin",
  query: obj({
    from: SUMMARY_QUERY.properties.from,
    to: SUMMARY_QUERY.properties.to,
    tz: SUMMARY_QUERY.properties.tz,
    group_by: oneOf(["day", "model", "day_model"], "Group by day in `tz` (default), model, or both.", {
      "x-error-message": "group_by must be 'day', 'model' or 'day_model'.",
    }),
  }),
  responses: {
    200: ok(
      "The report.",
      obj(
        {
          object: oneOf(["admin.revenue"], "Always `admin.revenue`."),
          group_by: oneOf(["day", "model", "day_model"], "How the groups were made."),
          from: isoTime("Start of the period."),
          to: isoTime("End of the period (exclusive)."),
          data: arr(REVENUE_ROW, "Groups by day, then model."),
          total: REVENUE_ROW,
        },
        ["object", "group_by", "from", "to", "data", "total"],
      ),
    ),
    ...errors({ 400: "`invalid_request` (an unknown time zone, a bad time or group_by, `from` after `to`)", ...OPERATOR_ERR }),
  },
});
