/**
 * Request contracts of the account endpoints (spec "Authentication", D2, D21, D34): the TypeBox schemas
 * of the JSON bodies of `POST /v1/auth/register`, `POST /v1/auth/login`, `POST /v1/auth/keys` and
 * `PATCH /v1/auth/keys/{key_id}` (validated and documented by `src/http/schemas/auth.ts`) and their
 * `Static` types, the input types of `src/accounts/registration.ts`, `keys.ts` and `key-controls.ts`.
 * Field types are checked by the schema; the rules with their own messages (email shape, lengths, the
 * key controls' ranges) stay the services'.
 */
import type { Static } from "typebox";
import { arr, int, nullable, num, obj, oneOf, str, typed } from "./schema.ts";

/** A key's mode (D32). */
export const KEY_MODE = oneOf(["live", "test"], "`live` keys move money; `test` keys (`gw_test_...`) are served by the simulator and move none.");
/** The period of a key's spend limit (D34). */
export const PERIOD = oneOf(["day", "week", "month", "total"], "The period of the spend limit and of `spent_usd`, in UTC (weeks start on Monday; `total`: since the key was made).");

/** The D34 fields of a key as set at creation and by PATCH; null clears one, an absent field keeps it. */
export const KEY_CONTROLS_IN = {
  spend_limit_usd: nullable(num("Spend limit per period, USD (at most 6 decimals); null removes it. Holds count against it at once, so parallel calls cannot overrun it (402 `key_spend_limit`).", { minimum: 0, "x-error-message": "spend_limit_usd must be a non-negative number of USD with at most 6 decimals, or null." })),
  spend_limit_period: typed<Static<typeof PERIOD> | null>({ ...PERIOD, description: "Period of the spend limit (default `month`).", type: ["string", "null"], enum: ["day", "week", "month", "total", null], "x-error-message": "spend_limit_period must be one of day, week, month, total." }),
  expires_at: nullable(str("When the key stops working, ISO 8601 (must be in the future); null: never.", { maxLength: 64, examples: ["2027-01-01T00:00:00Z"], "x-error-message": "expires_at must be an ISO 8601 date or time, or null." })),
  models: nullable(arr(str("A model id or a prefix ending in `*`.", { maxLength: 101 }), "Model ids or prefixes such as `alpha-*` the key may call; null: all.", { maxItems: 100, "x-error-message": "models must be a list of model ids or prefixes such as \"alpha-*\", or null." })),
  rpm: nullable(int("The key's own requests per minute, 1 to the account's; null: only the account's limit.", { minimum: 1, "x-error-message": "rpm must be a whole number of at least 1, or null." })),
};
/** A key's optional label. */
const NAME_IN = nullable(str("Optional label, at most 64 characters.", { maxLength: 64, "x-error-message": "name must be a string of at most 64 characters." }));

const LOGIN_MESSAGE = "email and password are required strings.";

/** The body of `POST /v1/auth/register`. */
export const REGISTER_BODY = obj(
  {
    email: str("Email address (at most 254 characters).", { maxLength: 254, examples: ["ada@example.com"], "x-error-message": "email must be a valid email address." }),
    password: str("8 to 1024 characters.", { minLength: 8, examples: ["correct horse battery"], "x-error-message": "password must be at least 8 characters." }),
  },
  ["email", "password"],
);

/** The body of `POST /v1/auth/login`. */
export const LOGIN_BODY = obj({ email: str("Email address.", { "x-error-message": LOGIN_MESSAGE }), password: str("Password.", { "x-error-message": LOGIN_MESSAGE }) }, ["email", "password"]);

/** The body of `POST /v1/auth/keys`: an object, or null (no field set). */
export const CREATE_KEY_BODY = typed<CreateKeyBody | null>({
  ...obj({
    name: NAME_IN,
    mode: typed<Static<typeof KEY_MODE> | null>({ ...KEY_MODE, description: "`live` (default) or `test`.", type: ["string", "null"], enum: ["live", "test", null], "x-error-message": "mode must be 'live' or 'test'." }),
    role: typed<"admin" | "member" | "viewer" | null>({
      type: ["string", "null"],
      enum: ["admin", "member", "viewer", null],
      description: "The role the key acts with: at most the creator's (an owner's keys act as `admin`), which is the default; `viewer` makes a read-only key.",
      "x-error-message": "role must be 'admin', 'member' or 'viewer'.",
    }),
    ...KEY_CONTROLS_IN,
  }),
  type: ["object", "null"],
});

/** The body of `PATCH /v1/auth/keys/{key_id}`. */
export const PATCH_KEY_BODY = obj({ name: NAME_IN, ...KEY_CONTROLS_IN });

/** A registration body as received (types already checked by the route schema). */
export type RegisterBody = Static<typeof REGISTER_BODY>;
/** A login body as received (types already checked by the route schema). */
export type LoginBody = Static<typeof LOGIN_BODY>;
/** The D34 fields of a key a body may set (creation and PATCH); null clears one, an absent field keeps it. */
export type KeyControlsBody = Static<ReturnType<typeof obj<typeof KEY_CONTROLS_IN>>>;
/** A key creation body as received, once null is read as `{}` (types already checked by the route schema). */
export type CreateKeyBody = KeyControlsBody & { name?: string | null; mode?: Static<typeof KEY_MODE> | null; role?: "admin" | "member" | "viewer" | null };
/** A key PATCH body as received (types already checked by the route schema). */
export type PatchKeyBody = Static<typeof PATCH_KEY_BODY>;
