/**
 * The one error handler (D1, D16): every failure leaves as `{"error": {code, message, type, param}}`.
 * Domain errors ({@link AppError}) keep their status and code; Fastify's own errors (body too large,
 * bad JSON, schema validation, unsupported media type) are translated; anything else is a 500
 * `api_error` whose details are logged, never sent (no stack traces, SQL or upstream secrets).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { AppError, errors } from "../errors.ts";

interface ValidationItem {
  instancePath?: string;
  keyword?: string;
  params?: Record<string, unknown>;
  message?: string;
}

/** The field a schema validation error is about (`/voice_settings/style` -> `voice_settings.style`). */
function paramOf(v: ValidationItem): string | null {
  const path = (v.instancePath ?? "").replace(/^\//, "").replaceAll("/", ".");
  const missing = v.params?.missingProperty;
  if (typeof missing === "string") return path ? `${path}.${missing}` : missing;
  const extra = v.params?.additionalProperty;
  if (typeof extra === "string") return path ? `${path}.${extra}` : extra;
  return path || null;
}

/** Translates any thrown value into an AppError. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as Partial<FastifyError> & { validation?: ValidationItem[]; type?: string };
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    const first = e.validation[0];
    const param = paramOf(first);
    const where = param ? `'${param}'` : "the request";
    return errors.invalidRequest(`Invalid value for ${where}: ${first.message ?? "invalid"}.`, param);
  }
  switch (e.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
    case "FST_REQ_FILE_TOO_LARGE":
    case "FST_FILES_LIMIT":
    case "FST_PARTS_LIMIT":
      return errors.payloadTooLarge("Request body too large (the limit is 25 MB).");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return errors.unsupportedMediaType("Unsupported Content-Type; send application/json.");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return errors.invalidRequest("The JSON body is empty.");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return errors.invalidRequest("The body is not valid JSON.");
    default:
      break;
  }
  if (err instanceof SyntaxError || e.type === "entity.parse.failed") {
    return errors.invalidRequest("The body is not valid JSON.");
  }
  const status = typeof e.statusCode === "number" ? e.statusCode : 500;
  if (status === 413) return errors.payloadTooLarge();
  if (status === 415) return errors.unsupportedMediaType("Unsupported Content-Type.");
  if (status >= 400 && status < 500) {
    return new AppError(status, "invalid_request", "The request could not be processed.");
  }
  return errors.internal();
}

/** Fastify error handler: renders the D1 body; logs 5xx with the original error. */
export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const appErr = toAppError(err);
  if (appErr.status >= 500) {
    request.log.error({ err }, "request failed");
  }
  if (reply.sent || reply.raw.headersSent) {
    // Headers already left (a broken stream): nothing more can be said; end the socket.
    reply.raw.destroy();
    return;
  }
  void reply
    .code(appErr.status)
    .headers(appErr.headers)
    .header("content-type", "application/json; charset=utf-8")
    .send(appErr.toBody());
}
