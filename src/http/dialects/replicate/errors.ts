/**
 * The Replicate dialect's errors (D47): `application/problem+json` (RFC 9457) `{title, detail, status}`,
 * as Replicate answers, with the native HTTP status and headers (`Retry-After`, ...) and the native error
 * `code` as an extension member. An input that fails validation (a {@link ReplicateInputError}, or a native
 * 400 naming a field of the create's body: the input's fields, `webhook`) answers 422 with
 * `invalid_fields: [{type, field, description}]`, Replicate's shape.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../../../errors.ts";
import { toAppError } from "../../error-handler.ts";
import { sendDialectError } from "../errors.ts";
import { ReplicateInputError } from "./models.ts";

/** The problem's `title` of each status (Replicate's words where it has them). */
const TITLES: Readonly<Record<number, string>> = {
  400: "Bad request",
  401: "Unauthenticated",
  402: "Insufficient credit",
  403: "Forbidden",
  404: "Not found",
  409: "Conflict",
  410: "Gone",
  413: "Request entity too large",
  415: "Unsupported media type",
  422: "Input validation failed",
  429: "Too many requests",
  500: "Internal server error",
  502: "Bad gateway",
  503: "Service unavailable",
};

/** One item of Replicate's `invalid_fields`. */
export interface InvalidField {
  type: string;
  field: string;
  description: string;
}

/** The problem body of `e` (an AppError read from any thrown value). */
export function problemOf(e: AppError, invalid: InvalidField[] | null = null): Record<string, unknown> {
  const status = invalid === null ? e.status : 422;
  return {
    title: TITLES[status] ?? (status >= 500 ? "Internal server error" : "Bad request"),
    detail: e.message,
    status,
    code: e.code,
    ...(invalid !== null ? { invalid_fields: invalid } : {}),
  };
}

/** Headers a native 400 names that are not fields of the input: they stay 400. */
const HEADER_PARAMS = new Set(["Cancel-After", "Idempotency-Key", "idempotency_key"]);

/** Fields of the create's body itself (the rest a native 400 names are the input's: `input.<field>`). */
const BODY_FIELDS: Readonly<Record<string, string>> = { webhook: "webhook", webhook_url: "webhook", webhook_events_filter: "webhook_events_filter", version: "version" };

/** The `invalid_fields` of an input failure, or null when `err` is not one. */
function invalidFieldsOf(err: unknown, e: AppError): InvalidField[] | null {
  if (err instanceof ReplicateInputError) return err.fields.map((f) => ({ type: "invalid", field: f.field, description: f.message }));
  if (e.status === 400 && typeof e.param === "string" && e.param !== "" && !HEADER_PARAMS.has(e.param)) {
    return [{ type: e.code, field: BODY_FIELDS[e.param] ?? `input.${e.param}`, description: e.message }];
  }
  return null;
}

/** The dialect scope's error handler: see the module comment. */
export function sendProblem(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const e = err instanceof ReplicateInputError ? new AppError(422, "invalid_input", err.message) : toAppError(err);
  const invalid = invalidFieldsOf(err, e);
  // A thrown non-AppError (a bug) is passed as it is, so that it is logged as an error with its stack.
  sendDialectError(err instanceof ReplicateInputError ? e : err, request, reply, () => problemOf(e, invalid), {
    status: invalid === null ? e.status : 422,
    contentType: "application/problem+json; charset=utf-8",
  });
}
