/**
 * Route schemas of the Replicate dialect, documented under the tag `replicate`. Requests and answers are
 * Replicate's (the prediction, model, version and file objects; pages `{previous, next, results}`), errors
 * `application/problem+json`; the schemas are built here rather than with `route()` of `common.ts`, whose
 * error answers are the native body. Bodies are not validated by a schema: the dialect reads them itself
 * and answers an input that fails the native rules with Replicate's 422 (`invalid_fields`).
 */
import { arr, bool, int, nullable, num, obj, oneOf, SECURITY, str, typed } from "../../schemas/common.ts";

/** `Authorization: Bearer <gateway key>` (what the `replicate` client sends) or `Authorization: Token <gateway key>`. */
const DIALECT_SECURITY = [{ replicateToken: [] }, ...SECURITY.key];

const TAGS = ["replicate"];

/** RFC 9457 problem details, as Replicate answers errors. */
const PROBLEM = obj(
  {
    title: str("A short summary of the problem (`Not found`, `Input validation failed`, `Insufficient credit`, ...)."),
    detail: str("What went wrong."),
    status: int("The HTTP status."),
    code: str("The gateway's error code (`insufficient_balance`, `rate_limited`, `model_not_found`, `provider_error`, ...)."),
    invalid_fields: arr(
      obj({ type: str("What failed (the native error code)."), field: str("The input field."), description: str("What is wrong.") }, ["type", "field", "description"]),
      "A 422: the input fields that failed validation.",
    ),
  },
  ["title", "detail", "status"],
  { description: "An error (application/problem+json)." },
);

const problem = (description: string) => ({ description, content: { "application/problem+json": { schema: PROBLEM } } });
const answer = (description: string, schema: object) => ({ description, content: { "application/json": { schema } } });

/** Error answers every call may give. */
const COMMON_ERRORS = {
  400: problem("A malformed request (a body that is not JSON, a bad `Cancel-After`)."),
  401: problem("A missing, unknown or expired key."),
  404: problem("An unknown prediction (or another account's), model or version."),
  429: problem("A rate limit (see `Retry-After`); one that no wait lifts says so with `x-should-retry: false`."),
  500: problem("An internal failure; nothing charged."),
  503: problem("The limit store or the database is unavailable."),
};

/** Errors of a create. */
const CREATE_ERRORS = {
  ...COMMON_ERRORS,
  402: problem("`insufficient_balance`, `billing_error`, `key_spend_limit`: nothing was held or charged."),
  403: problem("`model_not_allowed`: the key's allow-list."),
  409: problem("`idempotency_conflict` or `idempotency_in_progress` (an `Idempotency-Key` in use)."),
  410: problem("`model_retired`."),
  413: problem("The body is over the limit."),
  422: problem("An input that fails the model's schema or the gateway's rules (`invalid_fields` names each field); an unknown version."),
  502: problem("`provider_error`: no source could serve a speech, music or sound-effect call; nothing charged."),
};

const ISO = (description: string) => str(description, { format: "date-time" });

/** Replicate's prediction object. */
const PREDICTION = obj(
  {
    id: str("The prediction id: the gateway's job id (`GET /v1/jobs/{id}` shows the same job)."),
    model: str("`owner/name` as the prediction named it (`gateway/<catalog id>`, or a provider's Replicate name)."),
    version: str("The version id it ran (`hidden` for a job made elsewhere)."),
    input: typed({ type: "object", additionalProperties: true, description: "The input as sent (long strings cut)." }),
    output: typed({ description: "The stored file's URL, or a list of URLs (an image model under `gateway/`, and the provider names whose Replicate model answers a list); null until it succeeded.", anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }, { type: "null" }] }),
    error: nullable(str("Why it failed.")),
    logs: str("Always empty: the gateway's jobs keep no logs."),
    status: oneOf(["starting", "processing", "succeeded", "failed", "canceled", "aborted"], "`starting` (queued), `processing`, then `succeeded`, `failed`, `canceled`, or `aborted` (its `Cancel-After` passed before it started)."),
    source: oneOf(["api"], "Always `api`."),
    data_removed: bool("True once a succeeded prediction's output was deleted."),
    created_at: ISO("When it was created."),
    started_at: nullable(ISO("When it started running.")),
    completed_at: nullable(ISO("When it ended.")),
    metrics: obj({ predict_time: num("Seconds it ran."), total_time: num("Seconds from creation to its end.") }),
    urls: obj({ get: str("This prediction."), cancel: str("Its cancel.") }, ["get", "cancel"]),
    webhook: str("Its webhook, when it has one."),
    webhook_events_filter: arr(oneOf(["start", "output", "logs", "completed"], "An event."), "The events sent to its webhook."),
  },
  ["id", "model", "version", "input", "output", "error", "status", "created_at", "urls"],
  { description: "A prediction." },
);

const VERSION = obj(
  {
    id: str("The version id (64 hex digits): it changes when the model's input schema changes."),
    created_at: ISO("When this version was defined."),
    cog_version: nullable(str("Always null.")),
    openapi_schema: typed({ type: "object", additionalProperties: true, description: "Cog's OpenAPI document: `components.schemas.Input` is the input schema, generated from the native request's schema." }),
  },
  ["id", "created_at", "openapi_schema"],
);

const MODEL = obj(
  {
    url: str("This model."),
    owner: str("`gateway`, or the provider's Replicate owner."),
    name: str("The catalog id, or the provider's Replicate name."),
    description: nullable(str("What it makes.")),
    visibility: oneOf(["public"], "Always public."),
    is_official: bool("Always true."),
    run_count: int("Always 0."),
    latest_version: VERSION,
  },
  ["url", "owner", "name", "latest_version"],
  { description: "A model." },
);

const page = (item: object, what: string) => obj({ previous: nullable(str("Always null.")), next: nullable(str("The next page's URL, or null.")), results: arr(item as never, what) }, ["next", "results"]);

const OWNER_NAME = obj({ owner: str("`gateway`, or a provider's Replicate owner."), name: str("The catalog id, or the provider's model name.") }, ["owner", "name"]);
const ID = obj({ id: str("The prediction id.") }, ["id"]);

const CREATE_HEADERS = obj({
  prefer: str("`wait` (up to 60 s) or `wait=N` (1-60): answer once the prediction ended, or after the wait with `status: starting`.", { examples: ["wait=30"] }),
  "cancel-after": str("A duration (`30s`, `5m`, `1h30m`): a prediction that has not started by then ends `aborted`, one running is `canceled`; the hold is released either way.", { examples: ["5m"] }),
  "idempotency-key": str("A retry with the same key and body answers the first answer again: never a second prediction.", { maxLength: 128 }),
});

const CREATE_BODY_DOC =
  "`input` (the model's input: its `openapi_schema`), `webhook` (an https URL; the prediction is POSTed there, signed as Standard Webhooks with the secret of `GET /replicate/v1/webhooks/default/secret`) and `webhook_events_filter` (`start`, `output`, `logs`, `completed`; default `start` and `completed`).";

const CREATED = {
  201: answer(
    "The prediction. An image or video model's is a job: `starting` or `processing` (with `Prefer: wait`, its end, or `starting` when the wait ran out). A speech, music or sound-effect model's has run: `succeeded`, its `output` the stored file.",
    PREDICTION,
  ),
};

/** `POST /replicate/v1/predictions`. */
export const createPredictionSchema = {
  operationId: "replicateCreatePrediction",
  summary: "Replicate: create a prediction of a version",
  description: `\`version\` names the model: a version id, \`owner/name\` or \`owner/name:<version id>\` (every catalog model is \`gateway/<catalog id>\`). Image and video models run as jobs (held at submit, charged on success, released on failure); speech, music and sound effects run at once, billed as the native calls. ${CREATE_BODY_DOC}`,
  tags: TAGS,
  security: DIALECT_SECURITY,
  headers: CREATE_HEADERS,
  body: { description: "`{version, input, webhook?, webhook_events_filter?}`.", examples: [{ version: "gateway/imgB-2-pro", input: { prompt: "a lighthouse at dusk", size: "16:9" } }] },
  response: { ...CREATED, ...CREATE_ERRORS },
};

/** `POST /replicate/v1/models/{owner}/{name}/predictions`. */
export const createModelPredictionSchema = {
  operationId: "replicateCreateModelPrediction",
  summary: "Replicate: create a prediction of a model",
  description: `What \`replicate.run("owner/name", {input})\` sends. ${CREATE_BODY_DOC}`,
  tags: TAGS,
  security: DIALECT_SECURITY,
  headers: CREATE_HEADERS,
  params: OWNER_NAME,
  body: { description: "`{input, webhook?, webhook_events_filter?}`.", examples: [{ input: { prompt: "waves at dusk", duration: 4 } }] },
  response: { ...CREATED, ...CREATE_ERRORS },
};

/** `GET /replicate/v1/predictions/{id}`. */
export const getPredictionSchema = {
  operationId: "replicateGetPrediction",
  summary: "Replicate: a prediction",
  description: "Any job of the caller's account, rendered as a prediction. A prediction still `starting` or `processing` is answered when it ends or after 2 s (with `Prefer: wait=N`, N seconds, at most 60), whichever comes first: the client's 500 ms poll loop then stays within the tier's requests per minute.",
  headers: obj({ prefer: str("`wait=N` (1-60): how long to wait for a running prediction's end (default 2 s).", { examples: ["wait=10"] }) }),
  tags: TAGS,
  security: DIALECT_SECURITY,
  params: ID,
  response: { 200: answer("The prediction.", PREDICTION), ...COMMON_ERRORS },
};

/** `GET /replicate/v1/predictions`. */
export const listPredictionsSchema = {
  operationId: "replicateListPredictions",
  summary: "Replicate: the caller's predictions, newest first",
  description: "100 per page; `next` is the URL of the next page.",
  tags: TAGS,
  security: DIALECT_SECURITY,
  querystring: obj({ cursor: str("The page cursor (from `next`).", { maxLength: 200 }) }),
  response: { 200: answer("A page of predictions.", page(PREDICTION, "Predictions.")), ...COMMON_ERRORS },
};

/** `POST /replicate/v1/predictions/{id}/cancel`. */
export const cancelPredictionSchema = {
  operationId: "replicateCancelPrediction",
  summary: "Replicate: cancel a prediction",
  description: "A `starting` or `processing` prediction ends `canceled`, its whole hold released and the upstream request withdrawn; one that already ended is answered as it is.",
  tags: TAGS,
  security: DIALECT_SECURITY,
  params: ID,
  response: { 200: answer("The prediction.", PREDICTION), ...COMMON_ERRORS },
};

/** `GET /replicate/v1/models`. */
export const listModelsSchema = {
  operationId: "replicateListModels",
  summary: "Replicate: the models",
  description: "Every catalog image, video, speech, music and sound-effect model as `gateway/<catalog id>`, then the providers' Replicate names the catalog serves.",
  tags: TAGS,
  security: DIALECT_SECURITY,
  querystring: obj({ cursor: str("The page cursor (from `next`).", { maxLength: 20 }) }),
  response: { 200: answer("A page of models.", page(MODEL, "Models.")), ...COMMON_ERRORS },
};

/** `GET /replicate/v1/models/{owner}/{name}`. */
export const getModelSchema = {
  operationId: "replicateGetModel",
  summary: "Replicate: a model, with its input schema",
  tags: TAGS,
  security: DIALECT_SECURITY,
  params: OWNER_NAME,
  response: { 200: answer("The model; `latest_version.openapi_schema` gives its input.", MODEL), ...COMMON_ERRORS },
};

/** `GET /replicate/v1/models/{owner}/{name}/versions`. */
export const listVersionsSchema = {
  operationId: "replicateListModelVersions",
  summary: "Replicate: a model's versions (its current one)",
  tags: TAGS,
  security: DIALECT_SECURITY,
  params: OWNER_NAME,
  response: { 200: answer("A page with the current version.", page(VERSION, "Versions.")), ...COMMON_ERRORS },
};

/** `GET /replicate/v1/models/{owner}/{name}/versions/{id}`. */
export const getVersionSchema = {
  operationId: "replicateGetModelVersion",
  summary: "Replicate: a model version",
  tags: TAGS,
  security: DIALECT_SECURITY,
  params: obj({ ...OWNER_NAME.properties, id: str("The version id.") }, ["owner", "name", "id"]),
  response: { 200: answer("The version.", VERSION), ...COMMON_ERRORS },
};

/** `POST /replicate/v1/files`. */
export const createFileSchema = {
  operationId: "replicateCreateFile",
  summary: "Replicate: upload a file",
  description:
    "What `files.create` sends (and what the client does with every Blob or Buffer of an input): a multipart form with the file as `content` and a JSON `metadata` part. A PNG, JPEG or WebP of at most 10 MB is kept on the gateway; `urls.get` is its URL, which a prediction's input may name.",
  tags: TAGS,
  security: DIALECT_SECURITY,
  consumes: ["multipart/form-data"],
  response: {
    201: answer(
      "The file.",
      obj(
        {
          id: str("The file's name on the gateway."),
          content_type: str("Its type, read from its bytes."),
          size: int("Bytes."),
          checksums: obj({ sha256: str("SHA-256, hex.") }, ["sha256"]),
          metadata: typed({ type: "object", additionalProperties: true, description: "The metadata sent." }),
          created_at: ISO("When it was uploaded."),
          expires_at: nullable(str("Always null.")),
          urls: obj({ get: str("Its URL on the gateway.") }, ["get"]),
        },
        ["id", "content_type", "size", "urls"],
      ),
    ),
    ...COMMON_ERRORS,
    413: problem("Over 10 MB."),
    422: problem("Not a PNG, JPEG or WebP; no `content` part."),
  },
};

/** `GET /replicate/v1/webhooks/default/secret`. */
export const webhookSecretSchema = {
  operationId: "replicateWebhookSecret",
  summary: "Replicate: the webhook signing secret",
  description: "The account's default signing secret (`whsec_...`): every prediction webhook is signed with it, so `validateWebhook(request, secret)` of the client accepts it. The same secret signs the `webhook_url` of native job submits. Owners and admins of the organization only (403 `forbidden` for a member's key).",
  tags: TAGS,
  security: DIALECT_SECURITY,
  response: { 200: answer("The secret.", obj({ key: str("`whsec_...`.") }, ["key"])), ...COMMON_ERRORS, 403: problem("The key's member is not an owner or admin.") },
};

/** `GET /replicate/v1/account`. */
export const accountSchema = {
  operationId: "replicateAccount",
  summary: "Replicate: the account of the key",
  tags: TAGS,
  security: DIALECT_SECURITY,
  response: {
    200: answer("The account.", obj({ type: str("Always `organization`."), username: str("The account id."), name: str("The account id."), github_url: nullable(str("Always null.")) }, ["type", "username"])),
    ...COMMON_ERRORS,
  },
};
