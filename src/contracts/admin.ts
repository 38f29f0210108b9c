/**
 * Request contracts of the operator API's writes (D9, D22): the TypeBox schemas of the JSON bodies of
 * `POST /v1/admin/users/{user_id}/deposits` and `PUT /v1/admin/users/{user_id}/limits` (validated and
 * documented by `src/http/schemas/admin.ts`) and their `Static` types, the input types of
 * `src/accounts/admin.ts`. The schemas keep the service's own messages (`x-error-message`); the service
 * validates the bodies again (amount decimals and bound, unknown limit fields, pool names) and is the
 * reference.
 */
import type { Static, TUnsafe } from "typebox";
import { obj, str, typed } from "./schema.ts";

/** Tier-row fields an operator may override for one account (D22). */
export const LIMIT_FIELDS = [
  "rpm",
  "per_model_rpm",
  "tpm",
  "max_single_request",
  "image_concurrent",
  "image_queue_depth_cap",
  "video_concurrent",
  "video_queue_depth_cap",
  "audio_concurrent_per_provider",
] as const;
/** One overridable limit field. */
export type LimitField = (typeof LIMIT_FIELDS)[number];

// `anyOf`, not a type list: Ajv's strict mode allows a type list only with null.
/** A USD amount given as a number or a decimal string. */
export const AMOUNT = (what: string): TUnsafe<number | string> =>
  typed<number | string>({ anyOf: [{ type: "number" }, { type: "string", maxLength: 40 }], description: `${what} (USD, at most 6 decimals), a number or a decimal string.` });

/** The body of `POST /v1/admin/users/{user_id}/deposits`. */
export const DEPOSIT_BODY = obj(
  {
    amount_usd: { ...AMOUNT("Positive amount, at most 1,000,000"), "x-error-message": "amount_usd must be a positive number of USD with at most 6 decimals." },
    reference: str("A payment reference, shown on the ledger entry.", { maxLength: 200, "x-error-message": "reference must be a string of at most 200 characters." }),
  },
  ["amount_usd"],
);

const COUNT = (field: string): TUnsafe<number | null> => typed<number | null>({
  type: ["integer", "null"],
  minimum: 0,
  description: "A non-negative integer, or null to drop the override.",
  "x-error-message": `${field} must be a non-negative integer or null.`,
});

/**
 * A limits patch: each field a count or null (drop the override), `audio_concurrent_per_provider` counts by
 * pool. The schema does not refuse other fields: the service answers an unknown one `invalid_request`.
 */
export type LimitsPatch = { [F in Exclude<LimitField, "audio_concurrent_per_provider">]?: number | null } & {
  audio_concurrent_per_provider?: Record<string, number> | null;
};

/** The body of `PUT /v1/admin/users/{user_id}/limits`. */
export const LIMITS_BODY = typed<LimitsPatch>(
  obj(
    Object.fromEntries(
      LIMIT_FIELDS.map((f) => [
        f,
        f === "audio_concurrent_per_provider"
          ? {
              type: ["object", "null"],
              description: "Concurrent audio calls by pool, or null to drop the override.",
              additionalProperties: { type: "integer", minimum: 0 },
              "x-error-message": `${f} must map host_1, host_2, alpha, beta, host_3 to non-negative integers.`,
            }
          : COUNT(f),
      ]),
    ),
    [],
    { description: "Limit fields to override." },
  ),
);

/** A deposit body as received (types already checked by the route schema). */
export type DepositBody = Static<typeof DEPOSIT_BODY>;
