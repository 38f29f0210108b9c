/**
 * Route schemas of the account endpoints (spec "Authentication", D2, D8, D21).
 */
import { SIGNUP_CREDIT_MICROS } from "../../accounts/registration.ts";
import { formatUsd } from "../../money.ts";
import { arr, AUTH_ERR, bool, errors, int, isoTime, json, LIST, nullable, num, obj, ok, oneOf, ref, route, str, usd } from "./common.ts";

const KEY_MODE = oneOf(["live", "test"], "`live` keys move money; `test` keys (`gw_test_...`) are served by the simulator and move none (D32).");
const PERIOD = oneOf(["day", "week", "month", "total"], "The period of the spend limit and of `spent_usd`, in UTC (weeks start on Monday; `total`: since the key was made).");
/** The D34 fields of a key as shown. */
const KEY_CONTROLS_OUT = {
  spend_limit_usd: nullable(usd("The key's spend limit per period; null: none")),
  spend_limit_period: PERIOD,
  spent_usd: usd("What the key's live calls hold (open holds) or were charged in the current period"),
  expires_at: nullable(isoTime("When the key stops working (401 after it); null: never.")),
  models: nullable(arr(str("A model id or a prefix ending in `*`."), "The models the key may call (403 `model_not_allowed` for others); null: all.")),
  rpm: nullable(int("The key's own requests per minute (429 over it), within the account's; null: only the account's.")),
};
const KEY_CONTROLS_REQUIRED = Object.keys(KEY_CONTROLS_OUT);
/** The D34 fields of a key as set at creation and by PATCH; null clears one, an absent field keeps it. */
const KEY_CONTROLS_IN = {
  spend_limit_usd: nullable(num("Spend limit per period, USD (at most 6 decimals); null removes it. Holds count against it at once, so parallel calls cannot overrun it (402 `key_spend_limit`).", { minimum: 0, "x-error-message": "spend_limit_usd must be a non-negative number of USD with at most 6 decimals, or null." })),
  spend_limit_period: { ...PERIOD, description: "Period of the spend limit (default `month`).", type: ["string", "null"], enum: ["day", "week", "month", "total", null], "x-error-message": "spend_limit_period must be one of day, week, month, total." },
  expires_at: nullable(str("When the key stops working, ISO 8601 (must be in the future); null: never.", { maxLength: 64, examples: ["2027-01-01T00:00:00Z"], "x-error-message": "expires_at must be an ISO 8601 date or time, or null." })),
  models: nullable(arr(str("A model id or a prefix ending in `*`.", { maxLength: 101 }), "Model ids or prefixes such as `alpha-*` the key may call; null: all.", { maxItems: 100, "x-error-message": "models must be a list of model ids or prefixes such as \"alpha-*\", or null." })),
  rpm: nullable(int("The key's own requests per minute, 1 to the account's; null: only the account's limit.", { minimum: 1, "x-error-message": "rpm must be a whole number of at least 1, or null." })),
};
const KEY_ROW = obj(
  {
    key_id: str("Key id."),
    name: nullable(str("Label.")),
    prefix: str("First 12 characters of the secret."),
    created_at: isoTime("Creation time."),
    last_used_at: nullable(isoTime("Last use.")),
    mode: KEY_MODE,
    ...KEY_CONTROLS_OUT,
  },
  ["key_id", "name", "prefix", "created_at", "last_used_at", "mode", ...KEY_CONTROLS_REQUIRED],
);
const NAME_IN = nullable(str("Optional label, at most 64 characters.", { maxLength: 64, "x-error-message": "name must be a string of at most 64 characters." }));

const LOGIN_MESSAGE = "email and password are required strings.";

/** `POST /v1/auth/register`. */
export const registerSchema = route({
  operationId: "register",
  summary: "Create an account",
  description: `Creates an account with a signup credit of ${formatUsd(SIGNUP_CREDIT_MICROS)} USD and returns its first API key and a session token. No key needed.`,
  tags: ["auth"],
  access: "public",
  body: json(
    obj(
      {
        email: str("Email address (at most 254 characters).", { maxLength: 254, examples: ["ada@example.com"], "x-error-message": "email must be a valid email address." }),
        password: str("8 to 1024 characters.", { minLength: 8, examples: ["correct horse battery"], "x-error-message": "password must be at least 8 characters." }),
      },
      ["email", "password"],
    ),
  ),
  responses: {
    200: ok("The new account.", obj({ user_id: str("Account id."), api_key: str("API key (secret)."), session_token: str("Session token (secret).") }, ["user_id", "api_key", "session_token"])),
    ...errors({ 400: "`invalid_request` (bad email, password under 8 characters)", 409: "`email_taken`", 429: "`rate_limited`: too many registrations from this address (`REGISTRATIONS_PER_ADDRESS` per `REGISTRATION_WINDOW_S`); see `Retry-After`" }),
  },
});

/** `POST /v1/auth/login`. */
export const loginSchema = route({
  operationId: "login",
  summary: "Log in",
  description: "Exchanges email and password for a new session token (usable on the account endpoints).",
  tags: ["auth"],
  access: "public",
  body: json(obj({ email: str("Email address.", { "x-error-message": LOGIN_MESSAGE }), password: str("Password.", { "x-error-message": LOGIN_MESSAGE }) }, ["email", "password"])),
  responses: {
    200: ok("A new session.", obj({ user_id: str("Account id."), session_token: str("Session token (secret).") }, ["user_id", "session_token"])),
    ...errors({
      400: "`invalid_request`",
      401: "`auth_error` (wrong email or password)",
      429: "`rate_limited`: too many failed logins for this email or from this address (`LOGIN_FAILURES_PER_EMAIL`, `LOGIN_FAILURES_PER_ADDRESS` per `LOGIN_WINDOW_S`); see `Retry-After`",
    }),
  },
});

/** `GET /v1/auth/me`. */
export const getAccountSchema = route({
  operationId: "getAccount",
  summary: "The caller's account",
  tags: ["auth"],
  access: "keyOrSession",
  responses: {
    200: ok(
      "The account.",
      obj(
        {
          user_id: str("Account id."),
          email: str("Email address."),
          balance_usd: usd("Current balance"),
          tier: int("Current tier, 0 to 4."),
          tier_name: str("Tier display name."),
          total_deposits_usd: usd("Cumulative deposits"),
          created_at: isoTime("Creation time."),
        },
        ["user_id", "email", "balance_usd", "tier", "tier_name", "total_deposits_usd", "created_at"],
      ),
    ),
    ...errors(AUTH_ERR),
  },
});

/** `GET /v1/auth/limits`. */
export const getAccountLimitsSchema = route({
  operationId: "getAccountLimits",
  summary: "The caller's effective limits and current usage",
  description: "The caller's tier row (with any operator overrides applied) plus current usage.",
  tags: ["auth"],
  access: "keyOrSession",
  responses: {
    200: ok(
      "Effective limits and usage.",
      {
        allOf: [
          ref("TierRow"),
          obj({
            object: oneOf(["account.limits"], "Always `account.limits`."),
            usage: obj({
              requests_this_minute: int("Requests in the current window."),
              tokens_this_minute: int("Tokens in the current window."),
              window_resets_in_s: int("Seconds until the window resets."),
              audio_in_use: obj({}, [], { description: "Audio pool slots in use, by pool.", additionalProperties: { type: "integer" } }),
              image_running: int("Image jobs running."),
              image_queued: int("Image jobs queued."),
              video_running: int("Video jobs running."),
              video_queued: int("Video jobs queued."),
            }),
          }),
        ],
      },
    ),
    ...errors(AUTH_ERR),
  },
});

/** `GET /v1/auth/keys`. */
export const listKeysSchema = route({
  operationId: "listKeys",
  summary: "List API keys",
  description: "The caller's keys (secrets are never shown again). All keys share balance and rate limits.",
  tags: ["auth"],
  access: "keyOrSession",
  responses: { 200: ok("The keys.", LIST(KEY_ROW)), ...errors(AUTH_ERR) },
});

/** `POST /v1/auth/keys`. */
export const createKeySchema = route({
  operationId: "createKey",
  summary: "Create an API key",
  tags: ["auth"],
  access: "keyOrSession",
  description:
    "`mode: \"test\"` makes a test-mode key `gw_test_...` (D32): its calls are served by the simulator and priced as usual, but move no money (no ledger entries; the balance neither changes nor gates them); its answers carry `X-Svc-Test-Mode: true`. " +
    "The optional controls (D34) limit what the key may do: a spend limit per period, an expiry, a model allow-list and its own requests per minute. Checks run in this order: expiry (401), the key's rpm and the account's per-minute window (429, counted when the request arrives), the model allow-list (403 `model_not_allowed`), the per-model window and pools (429), the key's spend limit (402 `key_spend_limit`), the balance.",
  body: json({
    ...obj({
      name: NAME_IN,
      mode: { ...KEY_MODE, description: "`live` (default) or `test`.", type: ["string", "null"], enum: ["live", "test", null], "x-error-message": "mode must be 'live' or 'test'." },
      ...KEY_CONTROLS_IN,
    }),
    type: ["object", "null"],
  }),
  responses: {
    201: ok(
      "The new key; the secret `api_key` is shown only here.",
      obj(
        { key_id: str("Key id."), name: nullable(str("Label.")), api_key: str("The secret."), created_at: isoTime("Creation time."), mode: KEY_MODE, ...KEY_CONTROLS_OUT },
        ["key_id", "name", "api_key", "created_at", "mode", ...KEY_CONTROLS_REQUIRED],
      ),
    ),
    ...errors({ 400: "`invalid_request`", ...AUTH_ERR }),
  },
});

/** `PATCH /v1/auth/keys/:key_id`. */
export const updateKeySchema = route({
  operationId: "updateKey",
  summary: "Change an API key's name and controls",
  description:
    "Changes the fields present (D34); `null` clears one. A new spend limit or period counts what the key's live calls already hold or were charged in the period. The change applies at once on this process and within `AUTH_CACHE_MS` on the others.",
  tags: ["auth"],
  access: "keyOrSession",
  params: obj({ key_id: str("Key id.", { maxLength: 200 }) }, ["key_id"]),
  body: json(obj({ name: NAME_IN, ...KEY_CONTROLS_IN })),
  responses: {
    200: ok("The key as listed.", KEY_ROW),
    ...errors({ 400: "`invalid_request`", ...AUTH_ERR, 404: "`key_not_found` (not the caller's key)" }),
  },
});

/** `DELETE /v1/auth/keys/:key_id`. */
export const deleteKeySchema = route({
  operationId: "deleteKey",
  summary: "Delete an API key",
  description: "The key answers 401 at once.",
  tags: ["auth"],
  access: "keyOrSession",
  params: obj({ key_id: str("Key id.", { maxLength: 200 }) }, ["key_id"]),
  responses: {
    200: ok("Deleted.", obj({ key_id: str("Key id."), deleted: bool("Always true.", { enum: [true] }) }, ["key_id", "deleted"])),
    ...errors({ ...AUTH_ERR, 404: "`key_not_found` (not the caller's key)" }),
  },
});
