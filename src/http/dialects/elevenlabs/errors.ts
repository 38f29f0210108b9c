/**
 * Errors of the ElevenLabs dialect (D36): `{"detail": {"status", "message"}}` with the native status, and
 * FastAPI's 422 `{"detail": [{loc, msg, type}]}` for a request failing its schema (what
 * `@elevenlabs/elevenlabs-js` reads into `ElevenLabsError` and `UnprocessableEntityError`).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { sendDialectError } from "../errors.ts";

/** Ajv's error item as Fastify hands it over. */
interface ValidationItem {
  instancePath?: string;
  keyword?: string;
  params?: Record<string, unknown>;
  message?: string;
  /** The schema of the failing value (Ajv's `verbose`): its `x-error-message`, when set, words a pattern failure. */
  parentSchema?: Record<string, unknown>;
}

const LOC_PART: Record<string, string> = { body: "body", querystring: "query", params: "path", headers: "header" };

/** One FastAPI 422 item (`loc`, `msg`, `type`) of an Ajv failure in `context`. */
function fastApiItem(v: ValidationItem, context: string): { loc: (string | number)[]; msg: string; type: string } {
  const path = (v.instancePath ?? "").split("/").slice(1).map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg));
  const missing = v.params?.missingProperty;
  const loc = [LOC_PART[context] ?? context, ...path, ...(typeof missing === "string" ? [missing] : [])];
  switch (v.keyword) {
    case "required":
      return { loc, msg: "Field required", type: "missing" };
    case "type": {
      const t = String(v.params?.type ?? "value");
      const kind = t === "number" ? "float" : t === "integer" ? "int" : t === "boolean" ? "bool" : t === "object" ? "dict" : t;
      return { loc, msg: `Input should be a valid ${t}`, type: `${kind}_type` };
    }
    case "minimum":
      return { loc, msg: `Input should be greater than or equal to ${String(v.params?.limit)}`, type: "greater_than_equal" };
    case "maximum":
      return { loc, msg: `Input should be less than or equal to ${String(v.params?.limit)}`, type: "less_than_equal" };
    case "minLength":
      return { loc, msg: `String should have at least ${String(v.params?.limit)} character`, type: "string_too_short" };
    case "maxLength":
      return { loc, msg: `String should have at most ${String(v.params?.limit)} characters`, type: "string_too_long" };
    case "enum":
      return { loc, msg: `Input should be ${((v.params?.allowedValues as unknown[]) ?? []).map((x) => `'${String(x)}'`).join(", ")}`, type: "enum" };
    default: {
      const worded = v.parentSchema?.["x-error-message"];
      return { loc, msg: typeof worded === "string" ? worded : (v.message ?? "Invalid value"), type: "value_error" };
    }
  }
}

/**
 * Error handler of the dialect's scope (D36): a request failing its schema answers 422 with FastAPI's
 * `{"detail": [{loc, msg, type}]}`; every other error the native status with
 * `{"detail": {"status": <native error.code>, "message"}}` and the native headers (`Retry-After`, ...).
 */
export function elevenLabsErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const e = err as Partial<FastifyError> & { validation?: ValidationItem[]; validationContext?: string };
  if (reply.sent || reply.raw.headersSent) {
    reply.raw.destroy();
    return;
  }
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    const context = e.validationContext ?? "body";
    void reply
      .code(422)
      .header("content-type", "application/json; charset=utf-8")
      .send({ detail: e.validation.map((v) => fastApiItem(v, context)) });
    return;
  }
  sendDialectError(err, request, reply, (e) => ({ detail: { status: e.code, message: e.message } }));
}
