/**
 * Input validation for the fal and BFL fakes (fakes/fal.ts, fakes/bfl.ts), as the real services do it:
 * both are FastAPI/pydantic v2 apps, so a JSON body is checked against the endpoint's model in pydantic's
 * lax mode and every failure is one `{loc, msg, type, input, ctx?}` item of a 422 `{detail: [...]}`.
 *
 * What is modelled (pydantic v2's documented behaviour, "Conversion Table" and "Validation Errors"):
 * - a required field that is absent: `missing`, "Field required"; unknown fields are ignored (pydantic's
 *   default `extra="ignore"`), so a misspelt field shows as the real one missing;
 * - `null` is accepted only by a field declared nullable (`X | None`), else it fails the field's type;
 * - strings: only JSON strings (`string_type`); `min_length`/`max_length` (`string_too_short`/`_long`);
 * - literals (enums): exact values, no coercion (`literal_error`, "Input should be 'a', 'b' or 'c'");
 * - integers: JSON integers, floats without a fraction, numeric strings and booleans (lax mode);
 *   `int_type`, `int_parsing`, `int_from_float`; bounds `greater_than_equal`, `less_than_equal`,
 *   `multiple_of`;
 * - numbers: JSON numbers, numeric strings, booleans; `float_type`, `float_parsing`; bounds as above;
 * - booleans: `true`/`false`, 0/1 and the strings pydantic accepts (`"true"`, `"no"`, ...);
 *   `bool_type`, `bool_parsing`;
 * - lists: `list_type`, items checked with their index in `loc`; length `too_short`/`too_long`;
 * - nested models: `model_type`, their fields with the nested `loc`;
 * - unions (smart mode): valid when one member is; otherwise the errors of every member, each `loc`
 *   extended by the member's label (pydantic's `ImageSize`, `literal['a','b']`);
 * - a model validator's refusal: `value_error`, "Value error, <text>", `loc` `["body"]`.
 */

/** One item of a 422 `detail`. */
export interface ValidationItem {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** The rule of one field. `nullable` accepts `null` (a field typed `X | None`). */
export type FieldRule = (
  | { kind: "string"; minLength?: number; maxLength?: number }
  | { kind: "literal"; values: readonly string[] }
  | { kind: "int"; ge?: number; le?: number; multipleOf?: number }
  | { kind: "number"; ge?: number; le?: number }
  | { kind: "bool" }
  | { kind: "list"; items?: FieldRule; minItems?: number; maxItems?: number }
  | { kind: "model"; label: string; fields: Readonly<Record<string, FieldRule>>; required?: readonly string[] }
  | { kind: "union"; members: readonly { label: string; rule: FieldRule }[] }
  | { kind: "any" }
) & { nullable?: boolean };

/**
 * An endpoint's input model: its fields, the required ones, and the model validators (each returns the
 * text of a `value_error`, or null).
 */
export interface InputSchema {
  fields: Readonly<Record<string, FieldRule>>;
  required: readonly string[];
  checks?: readonly ((input: Readonly<Record<string, unknown>>) => string | null)[];
}

const TRUE_STRINGS = new Set(["1", "on", "t", "true", "y", "yes"]);
const FALSE_STRINGS = new Set(["0", "off", "f", "false", "n", "no"]);

/** Rule builders, so schemas read like the SDK types they follow. */
export const rule = {
  string: (opts: { minLength?: number; maxLength?: number; nullable?: boolean } = {}): FieldRule => ({ kind: "string", ...opts }),
  literal: (values: readonly string[], opts: { nullable?: boolean } = {}): FieldRule => ({ kind: "literal", values, ...opts }),
  int: (opts: { ge?: number; le?: number; multipleOf?: number; nullable?: boolean } = {}): FieldRule => ({ kind: "int", ...opts }),
  number: (opts: { ge?: number; le?: number; nullable?: boolean } = {}): FieldRule => ({ kind: "number", ...opts }),
  bool: (opts: { nullable?: boolean } = {}): FieldRule => ({ kind: "bool", ...opts }),
  list: (items?: FieldRule, opts: { minItems?: number; maxItems?: number; nullable?: boolean } = {}): FieldRule => ({ kind: "list", items, ...opts }),
  any: (): FieldRule => ({ kind: "any" }),
};

/** The label pydantic gives a literal member of a union: `literal['a','b']`. */
export function literalLabel(values: readonly string[]): string {
  return `literal[${values.map((v) => `'${v}'`).join(",")}]`;
}

/** Checks a JSON body against `schema`; returns the 422 items (empty when the input is valid), `loc` starting with `body`. */
export function validateInput(schema: InputSchema, body: unknown): ValidationItem[] {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return [{ type: "model_attributes_type", loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", input: body }];
  }
  const input = body as Record<string, unknown>;
  const errors: ValidationItem[] = [];
  for (const name of schema.required) {
    if (!Object.hasOwn(input, name)) errors.push({ type: "missing", loc: ["body", name], msg: "Field required", input });
  }
  for (const [name, fieldRule] of Object.entries(schema.fields)) {
    if (Object.hasOwn(input, name)) errors.push(...check(fieldRule, input[name], ["body", name]));
  }
  if (errors.length > 0) return errors;
  for (const validator of schema.checks ?? []) {
    const text = validator(input);
    if (text !== null) errors.push({ type: "value_error", loc: ["body"], msg: `Value error, ${text}`, input, ctx: { error: {} } });
  }
  return errors;
}

function check(r: FieldRule, value: unknown, loc: (string | number)[]): ValidationItem[] {
  if (value === null && r.nullable === true) return [];
  const fail = (type: string, msg: string, ctx?: Record<string, unknown>): ValidationItem[] => [
    ctx === undefined ? { type, loc, msg, input: value } : { type, loc, msg, input: value, ctx },
  ];
  switch (r.kind) {
    case "any":
      return [];
    case "string": {
      if (typeof value !== "string") return fail("string_type", "Input should be a valid string");
      const length = [...value].length;
      if (r.minLength !== undefined && length < r.minLength) {
        return fail("string_too_short", `String should have at least ${r.minLength} character${r.minLength === 1 ? "" : "s"}`, { min_length: r.minLength });
      }
      if (r.maxLength !== undefined && length > r.maxLength) {
        return fail("string_too_long", `String should have at most ${r.maxLength} character${r.maxLength === 1 ? "" : "s"}`, { max_length: r.maxLength });
      }
      return [];
    }
    case "literal": {
      if (typeof value === "string" && r.values.includes(value)) return [];
      const expected = expectedList(r.values);
      return fail("literal_error", `Input should be ${expected}`, { expected });
    }
    case "bool": {
      if (typeof value === "boolean") return [];
      if (typeof value === "number" && (value === 0 || value === 1)) return [];
      if (typeof value === "string") {
        const s = value.trim().toLowerCase();
        if (TRUE_STRINGS.has(s) || FALSE_STRINGS.has(s)) return [];
        return fail("bool_parsing", "Input should be a valid boolean, unable to interpret input");
      }
      return fail("bool_type", "Input should be a valid boolean");
    }
    case "int": {
      let n: number;
      if (typeof value === "boolean") n = value ? 1 : 0;
      else if (typeof value === "number") {
        if (!Number.isFinite(value)) return fail("finite_number", "Input should be a finite number");
        if (!Number.isInteger(value)) return fail("int_from_float", "Input should be a valid integer, got a number with a fractional part");
        n = value;
      } else if (typeof value === "string") {
        if (!/^\s*[-+]?\d+\s*$/.test(value)) return fail("int_parsing", "Input should be a valid integer, unable to parse string as an integer");
        n = Number(value);
      } else return fail("int_type", "Input should be a valid integer");
      return bounds(r, n, fail);
    }
    case "number": {
      let n: number;
      if (typeof value === "boolean") n = value ? 1 : 0;
      else if (typeof value === "number") n = value;
      else if (typeof value === "string") {
        if (value.trim() === "" || !Number.isFinite(Number(value))) return fail("float_parsing", "Input should be a valid number, unable to parse string as a number");
        n = Number(value);
      } else return fail("float_type", "Input should be a valid number");
      if (!Number.isFinite(n)) return fail("finite_number", "Input should be a finite number");
      return bounds(r, n, fail);
    }
    case "list": {
      if (!Array.isArray(value)) return fail("list_type", "Input should be a valid list");
      if (r.minItems !== undefined && value.length < r.minItems) {
        return fail("too_short", `List should have at least ${r.minItems} item${r.minItems === 1 ? "" : "s"} after validation, not ${value.length}`, {
          field_type: "List",
          min_length: r.minItems,
          actual_length: value.length,
        });
      }
      if (r.maxItems !== undefined && value.length > r.maxItems) {
        return fail("too_long", `List should have at most ${r.maxItems} item${r.maxItems === 1 ? "" : "s"} after validation, not ${value.length}`, {
          field_type: "List",
          max_length: r.maxItems,
          actual_length: value.length,
        });
      }
      const items = r.items;
      return items === undefined ? [] : value.flatMap((item, i) => check(items, item, [...loc, i]));
    }
    case "model": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        return fail("model_type", `Input should be a valid dictionary or instance of ${r.label}`, { class_name: r.label });
      }
      const obj = value as Record<string, unknown>;
      const errors: ValidationItem[] = [];
      for (const name of r.required ?? []) {
        if (!Object.hasOwn(obj, name)) errors.push({ type: "missing", loc: [...loc, name], msg: "Field required", input: obj });
      }
      for (const [name, fieldRule] of Object.entries(r.fields)) {
        if (Object.hasOwn(obj, name)) errors.push(...check(fieldRule, obj[name], [...loc, name]));
      }
      return errors;
    }
    case "union": {
      const all: ValidationItem[] = [];
      for (const member of r.members) {
        const errors = check(member.rule, value, [...loc, member.label]);
        if (errors.length === 0) return [];
        all.push(...errors);
      }
      return all;
    }
  }
}

function bounds(
  r: { ge?: number; le?: number; multipleOf?: number },
  n: number,
  fail: (type: string, msg: string, ctx?: Record<string, unknown>) => ValidationItem[],
): ValidationItem[] {
  if (r.ge !== undefined && n < r.ge) return fail("greater_than_equal", `Input should be greater than or equal to ${r.ge}`, { ge: r.ge });
  if (r.le !== undefined && n > r.le) return fail("less_than_equal", `Input should be less than or equal to ${r.le}`, { le: r.le });
  if (r.multipleOf !== undefined && n % r.multipleOf !== 0) return fail("multiple_of", `Input should be a multiple of ${r.multipleOf}`, { multiple_of: r.multipleOf });
  return [];
}

/** `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`: pydantic's list of expected literals. */
function expectedList(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  if (quoted.length <= 1) return quoted.join("");
  return `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}
