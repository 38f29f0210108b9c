/**
 * Request JSON bodies (issue 10, point 1a): every JSON body is parsed by one function, Fastify's own
 * JSON parser (prototype-poisoning checks included), and its nesting depth is bounded right there,
 * before any route, schema validator or recursive helper (`canonicalHash`, `JSON.stringify`) sees it.
 * Parsing itself is safe at any depth (V8's `JSON.parse` and secure-json-parse's scan are iterative);
 * walking the value recursively is not: 5,000 levels overflow the stack.
 */
import type { FastifyRequest } from "fastify";
import { type AppError, errors } from "../errors.ts";

/** Deepest nesting a request body may have; the body itself is level 1 (`{"a": {"b": 1}}` is 2 levels). */
export const MAX_JSON_DEPTH = 64;

/** A top-level field name `param` may repeat: short and plain, never an attacker's 1 MB key. */
const PLAIN_FIELD = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * The 400 for `value` when it nests objects or arrays more than `max` levels deep, else null. The walk
 * is iterative (an explicit stack), so it never overflows the call stack whatever the depth. `param`
 * names the top-level field holding the deep part when it is a plain name, else null.
 */
export function jsonDepthError(value: unknown, max: number = MAX_JSON_DEPTH): AppError | null {
  if (value === null || typeof value !== "object") return null;
  const stack: Array<{ v: object; depth: number; field: string | null }> = [{ v: value, depth: 1, field: null }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { v, depth, field } = top;
    if (depth > max) {
      const param = field !== null && PLAIN_FIELD.test(field) ? field : null;
      return errors.invalidRequest(`The JSON body is nested too deeply (the limit is ${max} levels).`, param);
    }
    if (Array.isArray(v)) {
      for (const item of v) {
        if (item !== null && typeof item === "object") stack.push({ v: item as object, depth: depth + 1, field });
      }
    } else {
      for (const key of Object.keys(v)) {
        const item = (v as Record<string, unknown>)[key];
        if (item !== null && typeof item === "object") stack.push({ v: item, depth: depth + 1, field: depth === 1 ? key : field });
      }
    }
  }
  return null;
}

/** A Fastify content-type parser over a string body. */
export type StringBodyParser = (req: FastifyRequest, body: string, done: (err: Error | null, body?: unknown) => void) => void;

/**
 * Wraps Fastify's JSON parser (`app.getDefaultJsonParser`) so the parsed value is refused with a 400
 * `invalid_request` when it nests more than {@link MAX_JSON_DEPTH} levels. `emptyIsUndefined`: an empty
 * (or blank) body is no body rather than an error (the catch-all parser of bodies sent without
 * `Content-Type: application/json`, as `curl -d` does).
 */
export function boundedJsonParser(parse: StringBodyParser, opts: { emptyIsUndefined?: boolean } = {}): StringBodyParser {
  return (req, body, done) => {
    if (opts.emptyIsUndefined && body.trim() === "") return done(null, undefined);
    parse(req, body, (err, value) => {
      if (err) return done(err, undefined);
      const tooDeep = jsonDepthError(value);
      if (tooDeep) return done(tooDeep, undefined);
      done(null, value);
    });
  };
}
