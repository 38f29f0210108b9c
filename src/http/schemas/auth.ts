/**
 * Route schemas of the account endpoints (spec "Authentication", D2, D8, D21).
 */
import { SIGNUP_CREDIT_MICROS } from "../../accounts/registration.ts";
import { CREATE_KEY_BODY, KEY_MODE, LOGIN_BODY, PATCH_KEY_BODY, PERIOD, REGISTER_BODY } from "../../contracts/auth.ts";
import { formatUsd } from "../../money.ts";
import { arr, AUTH_ERR, bool, errors, int, isoTime, json, LIST, nullable, obj, ok, oneOf, ref, route, str, usd } from "./common.ts";

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
/** A role in an organization (D41). */
export const ROLE = oneOf(["owner", "admin", "member", "viewer"], "A role in the organization: `owner`, `admin`, `member` or `viewer`.");
/** Who made a key and what it may manage (D41). */
const KEY_OWNER = {
  created_by: nullable(str("The member who made the key (`usr_...`); the key outlives the member's removal.")),
  role: { ...ROLE, description: "The role the key acts with: its creator's role when it was made, at most `admin`." },
};
const KEY_ROW = obj(
  {
    key_id: str("Key id."),
    name: nullable(str("Label.")),
    prefix: str("First 12 characters of the secret."),
    created_at: isoTime("Creation time."),
    last_used_at: nullable(isoTime("Last use.")),
    mode: KEY_MODE,
    ...KEY_OWNER,
    ...KEY_CONTROLS_OUT,
  },
  ["key_id", "name", "prefix", "created_at", "last_used_at", "mode", "created_by", "role", ...KEY_CONTROLS_REQUIRED],
);

/** `POST /v1/auth/register`. */
export const registerSchema = route({
  operationId: "register",
  summary: "Create an account",
  description: `Creates an account with a signup credit of ${formatUsd(SIGNUP_CREDIT_MICROS)} USD and returns its first API key and a session token. No key needed.`,
  tags: ["auth"],
  access: "public",
  body: json(REGISTER_BODY),
  responses: {
    200: ok(
      "The new user, its personal organization and their first secrets.",
      obj(
        {
          user_id: str("User id (`usr_...`)."),
          org_id: str("The user's personal organization (`org_...`): it holds the signup credit, the balance and the key."),
          api_key: str("API key (secret) of the personal organization."),
          session_token: str("Session token (secret)."),
        },
        ["user_id", "org_id", "api_key", "session_token"],
      ),
    ),
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
  body: json(LOGIN_BODY),
  responses: {
    200: ok("A new session.", obj({ user_id: str("User id."), session_token: str("Session token (secret): acts for the user's personal organization, or the one named by `X-Svc-Org`.") }, ["user_id", "session_token"])),
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
          user_id: nullable(str("The caller: the session's user, or the user who made the API key.")),
          email: nullable(str("The caller's email address.")),
          org_id: str("The organization the call acts for: the key's, or the session's (`X-Svc-Org`, default the personal one)."),
          org_name: nullable(str("Its name.")),
          role: ROLE,
          balance_usd: usd("The organization's current balance"),
          tier: int("Current tier, 0 to 4."),
          tier_name: str("Tier display name."),
          total_deposits_usd: usd("Cumulative deposits"),
          created_at: isoTime("When the organization was made."),
          orgs: arr(
            obj({ org_id: str("Organization id."), name: nullable(str("Its name.")), role: ROLE }, ["org_id", "name", "role"]),
            "A session's user's organizations with the user's role, oldest membership first; for an API key only its own.",
          ),
        },
        ["user_id", "email", "org_id", "org_name", "role", "balance_usd", "tier", "tier_name", "total_deposits_usd", "created_at", "orgs"],
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
    "`mode: \"test\"` makes a test-mode key `gw_test_...`: its calls are served by the simulator and priced as usual, but move no money (no ledger entries; the balance neither changes nor gates them); its answers carry `X-Svc-Test-Mode: true`. " +
    "The optional controls limit what the key may do: a spend limit per period, an expiry, a model allow-list and its own requests per minute. Checks run in this order: expiry (401), the model allow-list (403 `model_not_allowed`; a refused model takes no place in any per-minute window), the key's rpm, the account's per-minute window, the per-model window and pools (429), the key's spend limit (402 `key_spend_limit`), the balance. " +
    "The key belongs to the caller's organization (a session's `X-Svc-Org`), records its creator and keeps working after the creator leaves; it acts with `role`, by default and at most the creator's (an owner's keys act as `admin`; a higher one: 403 `forbidden_role`). Members change and delete only their own keys, admins and owners every key.",
  body: json(CREATE_KEY_BODY),
  responses: {
    201: ok(
      "The new key; the secret `api_key` is shown only here.",
      obj(
        { key_id: str("Key id."), name: nullable(str("Label.")), api_key: str("The secret."), created_at: isoTime("Creation time."), mode: KEY_MODE, ...KEY_OWNER, ...KEY_CONTROLS_OUT },
        ["key_id", "name", "api_key", "created_at", "mode", "created_by", "role", ...KEY_CONTROLS_REQUIRED],
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
    "Changes the fields present; `null` clears one. A new spend limit or period counts what the key's live calls already hold or were charged in the period. The change applies at once on this process and within `AUTH_CACHE_MS` on the others.",
  tags: ["auth"],
  access: "keyOrSession",
  params: obj({ key_id: str("Key id.", { maxLength: 200 }) }, ["key_id"]),
  body: json(PATCH_KEY_BODY),
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
