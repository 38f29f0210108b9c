/**
 * The JSON Schema builders of the request contracts and the route schemas (`src/http/schemas/`), typed
 * as TypeBox schemas: each returns TypeBox's own type (`TString`, `TObject<...>`, ...), so `Static<>` of
 * a request schema is the request's type, the one a route's handler receives (the TypeBox type provider
 * of `src/http/types.ts`) and a service takes as its input.
 *
 * A field's schema may carry `x-error-code` and `x-error-message` ({@link coded}): the error handler
 * (`src/http/error-handler.ts`) answers a schema failure with them (D1).
 */
import { type Static, type TArray, type TBoolean, type TInteger, type TNumber, type TObject, type TOptional, type TSchema, type TString, type TUnsafe, Type } from "typebox";

/**
 * A JSON Schema (2020-12, as OpenAPI 3.1 uses it), typed as a TypeBox schema: the helpers below return
 * TypeBox's own types (`TString`, `TObject<...>`, ...), so `Static<>` of a request schema is the type the
 * route's handler receives (the TypeBox type provider, `src/http/types.ts`).
 */
export type Schema = TSchema;
/** The keywords a helper adds to the schema it builds (`description`, `default`, `x-error-code`, ...). */
export type SchemaOptions = Record<string, unknown>;


// Built with TypeBox (the JSON Schema builder of the Fastify type provider); the result is plain
// JSON Schema 2020-12, which Ajv validates with and @fastify/swagger documents as it is. Each helper
// returns the TypeBox type of what it builds, so `Static<>` of a request schema is the request's type; a
// helper that adds a keyword TypeBox does not model (`enum` on a string, `type: [t, "null"]`, `$ref`)
// builds the same JSON and states its static type with `TUnsafe<T>`.
/** A schema typed as `T` (for JSON TypeBox builds without a type of its own). */
export const typed = <T>(schema: object): TUnsafe<T> => schema as unknown as TUnsafe<T>;
export const str = (description: string, extra: SchemaOptions = {}): TString => Type.String({ description, ...extra });
export const int = (description: string, extra: SchemaOptions = {}): TInteger => Type.Integer({ description, ...extra });
export const num = (description: string, extra: SchemaOptions = {}): TNumber => Type.Number({ description, ...extra });
export const bool = (description: string, extra: SchemaOptions = {}): TBoolean => Type.Boolean({ description, ...extra });
/** A string out of `values` (`enum`); its static type is the union of the values. */
export const oneOf = <const V extends readonly string[]>(values: V, description: string, extra: SchemaOptions = {}): TUnsafe<V[number]> =>
  typed<V[number]>(str(description, { enum: [...values], ...extra }));
/** `s` or null (`type: [t, "null"]`). */
export const nullable = <S extends Schema>(s: S): TUnsafe<Static<S> | null> =>
  typed<Static<S> | null>({ ...s, type: [(s as SchemaOptions).type as string, "null"] });
export const arr = <S extends Schema>(items: S, description: string, extra: SchemaOptions = {}): TArray<S> => Type.Array(items, { description, ...extra });
/** The properties of {@link obj}: those named in `required` as they are, the others optional. */
export type ObjProperties<P extends Record<string, Schema>, R extends string> = { [K in keyof P]: K extends R ? P[K] : TOptional<P[K]> };
/** An object schema; the properties not listed in `required` are optional. */
export const obj = <P extends Record<string, Schema>, const R extends string = never>(
  properties: P,
  required: readonly R[] = [],
  extra: SchemaOptions = {},
): TObject<ObjProperties<P, R>> =>
  Type.Object(
    Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, (required as readonly string[]).includes(k) ? v : Type.Optional(v)])),
    extra,
  ) as TObject<ObjProperties<P, R>>;
/** A reference to a shared component (`components.ts`). */
export const ref = <T = unknown>(name: string): TUnsafe<T> => typed<T>({ $ref: `#/components/schemas/${name}` });
export const usd = (description: string): TNumber => num(`${description} (USD, at most 6 decimals).`);
export const isoTime = (description: string): TString => str(description, { format: "date-time" });
export const binary = (description: string): TUnsafe<unknown> => typed({ type: "string", format: "binary", contentMediaType: "application/octet-stream", description });
/**
 * Marks a field with the spec's error code for a schema failure on it (see the module comment): a string
 * for every keyword, or a map from Ajv keyword to code (`*`: the others); `message` likewise, and may
 * contain `{value}` and `{param}`. The schema keeps its type.
 */
export const coded = <S extends Schema>(schema: S, code: string | Record<string, string>, message?: string | Record<string, string>): S =>
  ({
    ...schema,
    "x-error-code": code,
    ...(message ? { "x-error-message": message } : {}),
  }) as S;
/** A query-string integer: query values arrive as text (no type coercion: `buildApp` in http/app.ts), so the digits are checked. */
export const queryInt = (description: string, pattern: string, message: string, extra: SchemaOptions = {}): TString =>
  str(description, { pattern, maxLength: 10, "x-error-message": message, ...extra });

