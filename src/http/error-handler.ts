/**
 * The one error handler (D1, D16): every failure leaves as `{"error": {code, message, type, param}}`.
 * Domain errors ({@link AppError}) keep their status and code; Fastify's own errors (body too large,
 * bad JSON, schema validation, unsupported media type) are translated; anything else is a 500
 * `api_error` whose details are logged, never sent (no stack traces, SQL or upstream secrets).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { AppError, errors } from "../errors.ts";

/**
 * Annotation keywords of the route schemas (see `schemas/common.ts`), registered with Ajv: `x-error-code`
 * is the spec's code for a failure on that field, `x-error-message` its message (`{value}` is replaced
 * by the offending value, `{param}` by the field). Either is a string (every keyword) or a map from Ajv
 * keyword to string with `*` for the others.
 */
export const SCHEMA_ERROR_KEYWORDS = ["x-error-code", "x-error-message"] as const;

/** One Ajv error as Fastify hands it over (`verbose`: with the failing schema and value). */
interface ValidationItem {
  instancePath?: string;
  keyword?: string;
  params?: Record<string, unknown>;
  message?: string;
  parentSchema?: Record<string, unknown>;
  data?: unknown;
}

/** The field a schema validation error is about (`/voice_settings/style` -> `voice_settings.style`). */
function paramOf(v: ValidationItem): string | null {
  // `/messages/0/role` -> `messages[0].role`, as the services name array items.
  const path = (v.instancePath ?? "")
    .split("/")
    .slice(1)
    .map((seg) => seg.replaceAll("~1", "/").replaceAll("~0", "~"))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), "");
  const missing = v.params?.missingProperty;
  if (typeof missing === "string") return path ? `${path}.${missing}` : missing;
  const extra = v.params?.additionalProperty;
  if (typeof extra === "string") return path ? `${path}.${extra}` : extra;
  return path || null;
}

/** The schema of the field a validation error is about: a missing property's own schema, else the failing one. */
function fieldSchemaOf(v: ValidationItem): Record<string, unknown> | undefined {
  const missing = v.params?.missingProperty;
  if (v.keyword === "required" && typeof missing === "string") {
    const props = v.parentSchema?.properties as Record<string, Record<string, unknown>> | undefined;
    return props?.[missing];
  }
  return v.parentSchema;
}

/** An annotation's value for a failed keyword: a string applies to all, a map names keywords (`*`: the rest). */
function byKeyword(annotation: unknown, keyword: string | undefined): string | undefined {
  if (typeof annotation === "string") return annotation;
  if (annotation === null || typeof annotation !== "object") return undefined;
  const map = annotation as Record<string, unknown>;
  const value = (keyword !== undefined ? map[keyword] : undefined) ?? map["*"];
  return typeof value === "string" ? value : undefined;
}

/** Most characters of an offending value an error message repeats (a 1 MB "model" is not sent back). */
const MAX_ECHOED_CHARS = 80;

/** `value` as an error message repeats it: at most {@link MAX_ECHOED_CHARS} characters, then `...`. */
function echoed(value: string): string {
  const chars = Array.from(value);
  return chars.length <= MAX_ECHOED_CHARS ? value : `${chars.slice(0, MAX_ECHOED_CHARS).join("")}...`;
}

/**
 * The one mapping from a schema failure to the D1 error (issue 9): 400 with the field's `x-error-code`
 * (default `invalid_request`), its `x-error-message` or a message naming the field, and `param`.
 */
export function schemaError(v: ValidationItem): AppError {
  const param = paramOf(v);
  const field = fieldSchemaOf(v);
  const code = byKeyword(field?.["x-error-code"], v.keyword) ?? "invalid_request";
  const template = byKeyword(field?.["x-error-message"], v.keyword);
  let message: string;
  if (v.keyword === "required") {
    message = `${param} is required.`;
  } else if (typeof template === "string") {
    const value = echoed(typeof v.data === "string" ? v.data : JSON.stringify(v.data) ?? "");
    message = template.replaceAll("{value}", value).replaceAll("{param}", param ?? "");
  } else {
    message = `Invalid value for ${param ? `'${param}'` : "the request"}: ${v.message ?? "invalid"}.`;
  }
  return new AppError(400, code, message, param);
}

/** Translates any thrown value into an AppError. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as Partial<FastifyError> & { validation?: ValidationItem[]; type?: string };
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    // A failed `oneOf`/`anyOf` lists its branches' errors first and its own last: the last one names the field.
    return schemaError(e.validation[e.validation.length - 1]);
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

/**
 * Fastify error handler: renders the D1 body. Logs tell the truth (issue "Hardening" 6): an expected
 * 5xx (an upstream that failed, a limit store or the gateway shutting down: an {@link AppError}) is a
 * `warn` line with its code and the upstream's message, without a stack; anything else is a bug, logged
 * at `error` with the original error and its stack. 4xx answers are not logged here (the request log
 * has them).
 */
export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const appErr = toAppError(err);
  if (appErr.status >= 500) {
    if (err instanceof AppError) {
      const cause = err.cause instanceof Error ? err.cause.message : undefined;
      request.log.warn({ status: appErr.status, code: appErr.code, ...(cause ? { upstream: cause } : {}) }, appErr.message);
    } else {
      request.log.error({ err }, "request failed");
    }
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
