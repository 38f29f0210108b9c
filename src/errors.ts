/**
 * The one error catalogue of the gateway (decisions D1, D2, D16).
 *
 * Services throw {@link AppError}; the HTTP layer renders it as
 * `{"error": {"code", "message", "type", "param"}}` with the catalogue's status. Nothing else builds
 * error JSON by hand.
 */

/** Error classes of D1; D16 derives the class from the HTTP status. */
export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "billing_error"
  | "rate_limit_error"
  | "provider_error"
  | "api_error";

/** The `type` of D16 for an HTTP status. */
export function errorTypeForStatus(status: number): ErrorType {
  if (status === 401) return "authentication_error";
  if (status === 402) return "billing_error";
  if (status === 403) return "permission_error";
  if (status === 429) return "rate_limit_error";
  if (status === 502 || status === 504) return "provider_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

/**
 * A failure the caller is told about: HTTP status, stable `error.code`, human message and the offending
 * field (`param`, or null). `headers` are added to the answer (for example `Retry-After` on a 429).
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    param: string | null = null,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "AppError";
    this.status = status;
    this.code = code;
    this.param = param;
    this.headers = headers;
  }

  get type(): ErrorType {
    return errorTypeForStatus(this.status);
  }

  /** The D1 body. */
  toBody(): { error: { code: string; message: string; type: ErrorType; param: string | null } } {
    return { error: { code: this.code, message: this.message, type: this.type, param: this.param } };
  }
}

/**
 * Factories, one per error the gateway answers with. Grouped by status; codes are the spec's tables
 * and D2/D16/D20/D21/D24.
 */
export const errors = {
  // 400
  invalidRequest: (message: string, param: string | null = null) =>
    new AppError(400, "invalid_request", message, param),
  /** A realtime socket route asked without `Upgrade: websocket` (D42, D43). */
  upgradeRequired: (path: string) =>
    new AppError(426, "upgrade_required", `${path} is a WebSocket: connect with Upgrade: websocket (for example new WebSocket("ws://.../${path.replace(/^\//, "")}")).`, null, { Upgrade: "websocket" }),
  notATtsModel: (model: string) =>
    new AppError(400, "not_a_tts_model", `'${model}' is not a speech model.`, "model"),
  voiceRequired: () => new AppError(400, "voice_required", "voice_id (or voice) is required.", "voice_id"),
  inputTooLong: (measured: number, max: number) =>
    new AppError(400, "input_too_long", `input is ${measured} characters; the maximum is ${max}.`, "input"),
  /** D20; `message` replaces the generic one (speech words it by what the voice is). */
  voiceModelMismatch: (voiceProvider: string, model: string, message?: string) =>
    new AppError(
      400,
      "voice_model_mismatch",
      message ?? `A ${voiceProvider} voice cannot be used with model '${model}'; ${voiceProvider} voices work only with ${voiceProvider}-* speech models.`,
      "voice_id",
    ),
  notAMusicModel: (model: string) =>
    new AppError(400, "not_a_music_model", `'${model}' is not a music model.`, "model"),
  notAnSfxModel: (model: string) =>
    new AppError(400, "not_an_sfx_model", `'${model}' is not a sound-effect model.`, "model"),
  notAVoiceDesignModel: (model: string) =>
    new AppError(400, "not_a_voice_design_model", `'${model}' is not a voice design model.`, "model"),
  notAVoiceCloneModel: (model: string) =>
    new AppError(400, "not_a_voice_clone_model", `'${model}' is not a voice clone model.`, "model"),
  /** A text field over its limit: names the model, the field, the measured and the maximum counts (D2). */
  tooLong: (code: string, model: string, field: string, measured: number, max: number, unit = "characters") =>
    new AppError(
      400,
      code,
      `${field} is ${measured} ${unit} long; the maximum for ${model} is ${max}.`,
      field,
    ),
  invalidDuration: (message: string, param: string) => new AppError(400, "invalid_duration", message, param),
  /** A webhook URL that is not `https://` or does not resolve to public addresses only (D31). */
  invalidWebhookUrl: (message: string, param = "url") => new AppError(400, "invalid_webhook_url", message, param),
  // 401
  auth: (message = "Missing or invalid API key.") => new AppError(401, "auth_error", message),
  // 402
  billing: (message = "Balance too low for this request.") => new AppError(402, "billing_error", message),
  insufficientCredits: (needUsd: string) =>
    new AppError(402, "insufficient_credits", `This call costs ${needUsd} USD; the balance is too low.`),
  insufficientBalance: (message = "The hold could not be placed: balance too low.") =>
    new AppError(402, "insufficient_balance", message),
  /** D34: the call's hold would take its API key past the key's spend limit. */
  keySpendLimit: (message: string) => new AppError(402, "key_spend_limit", message),
  /** D44: the hold would pass a `block` budget; `param` is the budget's id. */
  budgetExceeded: (message: string, budgetId: string) => new AppError(402, "budget_exceeded", message, budgetId),
  // 403
  /** D34: the API key's `models` allow-list does not include the model. */
  modelNotAllowed: (model: string) =>
    new AppError(403, "model_not_allowed", `This API key may not call ${model}: it is not in the key's models.`, "model"),
  voiceNotOwned: () =>
    new AppError(403, "voice_not_owned", "This voice belongs to another organization.", "voice_id"),
  /** D41: an invite accepted by a session whose user is not the invited email. */
  inviteEmailMismatch: () =>
    new AppError(403, "invite_email_mismatch", "This invite is for another email address: sign in as the invited user to accept it.", "token"),
  /** D41: the caller's role in the organization does not allow the action; `message` says which role does. */
  forbiddenRole: (message: string) => new AppError(403, "forbidden_role", message),
  // 410
  /** D35: the model's shutdown date has come; names the model and the date. */
  modelRetired: (model: string, date: string) =>
    new AppError(
      410,
      "model_retired",
      `${model} was retired on ${date} (its shutdown date) and is no longer served; choose another model (GET /v1/models). Nothing was charged.`,
      "model",
    ),
  /** D27; `message` replaces the generic one (speech names the source for a voice it never had). */
  voiceUnavailable: (message = "This voice is no longer available at the upstream that created it; nothing was charged.") =>
    new AppError(410, "voice_unavailable", message, "voice_id"),
  // 404
  notFound: (message = "No such route.") => new AppError(404, "not_found", message),
  userNotFound: () => new AppError(404, "user_not_found", "No such user."),
  keyNotFound: () => new AppError(404, "key_not_found", "No such key."),
  /** D44: no such budget in the caller's organization. */
  budgetNotFound: () => new AppError(404, "budget_not_found", "No such budget."),
  /** D41: an unknown organization, or one the caller is not a member of (never 403). */
  orgNotFound: (param: string | null = null) => new AppError(404, "org_not_found", "No such organization.", param),
  /** D41: an unknown, used or expired invite token (never says which). */
  inviteNotFound: () => new AppError(404, "invite_not_found", "No such invite: it may have expired or been used.", "token"),
  /** D41: an invite past its 7 days. */
  inviteExpired: () => new AppError(404, "invite_not_found", "This invite expired (invites last 7 days): ask for a new one.", "token"),
  /** D41: an organization member that does not exist. */
  memberNotFound: () => new AppError(404, "member_not_found", "No such member.", "user_id"),
  webhookNotFound: () => new AppError(404, "webhook_not_found", "No such webhook endpoint.", "id"),
  deliveryNotFound: () => new AppError(404, "delivery_not_found", "No such webhook delivery.", "id"),
  /** D29: an unknown request id, or another account's (never 403: do not reveal that it exists). */
  requestNotFound: () => new AppError(404, "request_not_found", "No such request.", "id"),
  // 405
  methodNotAllowed: (method: string, url: string) =>
    new AppError(405, "method_not_allowed", `Method ${method} is not allowed on ${url}.`),
  // 409
  emailTaken: () => new AppError(409, "email_taken", "This email is already registered.", "email"),
  /** D41: an invite to (or an accept by) someone who is already a member. */
  alreadyMember: () => new AppError(409, "already_member", "This user is already a member of the organization.", "email"),
  /** D41: an organization with money or work in it cannot be deleted; `message` says what is left. */
  orgNotEmpty: (message: string) => new AppError(409, "org_not_empty", message, "org_id"),
  /** D41: a user's personal organization cannot be deleted. */
  personalOrg: () => new AppError(409, "personal_org", "A personal organization cannot be deleted.", "org_id"),
  /** D41: the change would leave the organization without an owner. */
  lastOwner: () =>
    new AppError(409, "last_owner", "The organization's last owner cannot leave or be demoted: make another member owner first."),
  /** D30: cancel of a job that already ended. */
  jobNotCancelable: (message: string) => new AppError(409, "job_not_cancelable", message, "id"),
  // 413
  payloadTooLarge: (message = "Request body too large.") => new AppError(413, "invalid_request", message),
  // 415
  unsupportedMediaType: (message: string) => new AppError(415, "invalid_request", message),
  // 429
  rateLimited: (message: string, retryAfterS: number) =>
    new AppError(429, "rate_limited", message, null, {
      "Retry-After": String(Math.max(1, Math.ceil(retryAfterS))),
    }),
  /**
   * 429 `rate_limited` for a limit that no wait can lift (D48: a tier pool of size 0, a request over
   * the tier's `max_single_request`): `x-should-retry: false` and no `Retry-After`, so SDKs that retry a
   * 429 (the `openai` package reads the header) give up at once. `message` names the way up.
   */
  neverAllowed: (message: string) => new AppError(429, "rate_limited", message, null, { "x-should-retry": "false" }),
  // 500
  ownershipWriteFailed: () =>
    new AppError(
      500,
      "ownership_write_failed",
      "The voice was created but its ownership could not be recorded; nothing was charged. It is safe to retry.",
    ),
  storageFailed: () =>
    new AppError(500, "storage_error", "The output could not be stored; nothing was charged. It is safe to retry."),
  internal: (message = "Internal error.") => new AppError(500, "api_error", message),
  // 502
  provider: (message = "The upstream provider failed; nothing was charged.") =>
    new AppError(502, "provider_error", message),
  // 503
  serviceUnavailable: () =>
    new AppError(503, "service_unavailable", "The gateway is shutting down; retry the request.", null, { Connection: "close" }),
} as const;
