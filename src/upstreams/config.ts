/**
 * The real upstream sources of the gateway (decision D25): the `UPSTREAMS` setting parsed, validated and
 * merged with the older `TEXT_UPSTREAMS` (which is read as `openai` entries).
 *
 * `UPSTREAMS` is a JSON array, inline or as the path of a JSON file (any value that does not start with
 * `[`). Each entry:
 * `{name, protocol, base_url, api_key, families, models?, timeout_s?, max_concurrency?, trusted_hosts?}`.
 * Any error throws {@link UpstreamsConfigError}, whose message names the entry (index and name) and the
 * field, and never contains a key: the process does not start.
 *
 * This module lies in upstreams/ (not in config.ts, the lowest layer) because it checks families and
 * model ids against the catalog; config.ts hands it the raw setting and the environment lookup.
 */
import { readFileSync } from "node:fs";
import { Type, type Static } from "typebox";
import { Value } from "typebox/value";
import type { Config } from "../config.ts";
import { MODELS } from "../catalog/models.ts";
import { TEXT_MODELS } from "../catalog/text-models.ts";

/** The protocols a source can speak (D25); each has its adapter folder under upstreams/. */
export type UpstreamProtocol = "elevenlabs" | "minimax" | "fal" | "bfl" | "openai";

/** Every protocol, in the order D25 lists them. */
export const UPSTREAM_PROTOCOLS: readonly UpstreamProtocol[] = ["elevenlabs", "minimax", "fal", "bfl", "openai"];

/** The text families of the catalog (`txtA`, `txtB`, ...), in catalog order. */
export const TEXT_FAMILIES: readonly string[] = [...new Set(TEXT_MODELS.map((m) => m.family))];

/**
 * Which protocol may serve which family (D25). Families are the neutral prefixes: `transcribe` is the
 * catalog family `host1` (pool host_1) and `understand` is `host2` (pool host_2). ElevenLabs serves
 * `transcribe` too, with Scribe (D43: batch `POST /v1/speech-to-text` and the realtime socket).
 */
export const PROTOCOL_FAMILIES: Readonly<Record<UpstreamProtocol, readonly string[]>> = {
  elevenlabs: ["alpha", "transcribe"],
  minimax: ["beta", "vidC"],
  fal: ["imgA", "imgB", "vidA", "vidB", "vidC", "vidD"],
  bfl: ["imgB"],
  openai: ["imgC", "transcribe", "understand", ...TEXT_FAMILIES],
};

/** Every family a source can serve (D25), in a stable order. */
export const UPSTREAM_FAMILIES: readonly string[] = [...new Set(Object.values(PROTOCOL_FAMILIES).flat())];

/** The catalog family of a D25 family name (`transcribe` -> `host1`, `understand` -> `host2`, others as is). */
export function catalogFamilyOf(family: string): string {
  if (family === "transcribe") return "host1";
  if (family === "understand") return "host2";
  return family;
}

/**
 * One configured source, validated and resolved.
 * - `name`: unique; `[a-z0-9-]` for `UPSTREAMS` entries (a `TEXT_UPSTREAMS` entry keeps its name, with
 *   `#<index>` appended when repeated, as the text fallback plan always named it);
 * - `baseUrl`: http(s) URL without trailing slash;
 * - `apiKey`: the key itself (an `env:VARNAME` reference already resolved). Never log or answer it;
 *   `JSON.stringify` and `util.inspect` of a source show `[redacted]` instead;
 * - `families`: the D25 family names it serves, in the order given;
 * - `models`: overrides of the default upstream ids (`"<model id>"` and `"<model id>/image"` keys);
 * - `timeoutMs`: `timeout_s` in milliseconds, or null (the protocol adapter's default);
 * - `maxConcurrency`: most calls in flight at once, or null (no limit);
 * - `trustedHosts`: lowercased `host[:port]` values that may receive the key and whose output files are
 *   downloaded without the SSRF check (D25);
 * - `origin`: the setting the entry came from.
 */
export interface UpstreamSource {
  name: string;
  protocol: UpstreamProtocol;
  baseUrl: string;
  apiKey: string;
  families: string[];
  models: Record<string, string>;
  timeoutMs: number | null;
  maxConcurrency: number | null;
  trustedHosts: string[];
  origin: "UPSTREAMS" | "TEXT_UPSTREAMS";
}

/** A configuration error of `UPSTREAMS` or of the merge with `TEXT_UPSTREAMS`; the message holds no key. */
export class UpstreamsConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UpstreamsConfigError";
  }
}

/** The JSON shape of one `UPSTREAMS` entry (D25); cross-field rules are checked after it. */
const EntrySchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, pattern: "^[a-z0-9-]+$" }),
    protocol: Type.Union([Type.Literal("elevenlabs"), Type.Literal("minimax"), Type.Literal("fal"), Type.Literal("bfl"), Type.Literal("openai")]),
    base_url: Type.String({ minLength: 1, maxLength: 2000 }),
    api_key: Type.String({ minLength: 1, maxLength: 4000 }),
    families: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 64 }),
    models: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 200 }), Type.String({ minLength: 1, maxLength: 500 }))),
    timeout_s: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 86_400 })),
    max_concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    trusted_hosts: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { maxItems: 100 })),
  },
  { additionalProperties: false },
);
type Entry = Static<typeof EntrySchema>;

/** Human words for a schema error of one field; TypeBox's own messages never repeat the value. */
function describeSchemaError(field: string, keyword: string, message: string): string {
  if (field === "protocol") return `must be one of ${UPSTREAM_PROTOCOLS.join(", ")}`;
  if (field === "name" && keyword === "pattern") return "must use only a-z, 0-9 and '-'";
  return message;
}

/** `/families/0` -> `families[0]`; `/models/x` -> `models["x"]`. */
function fieldOf(instancePath: string): string {
  const parts = instancePath.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  let out = parts[0] ?? "";
  for (const p of parts.slice(1)) out += /^\d+$/.test(p) ? `[${p}]` : `[${JSON.stringify(p)}]`;
  return out;
}

/** Reads a setting's JSON text: inline when it starts with `[`, else the file it names. */
function readSettingText(setting: string, variable: string): string {
  const trimmed = setting.trim();
  if (trimmed.startsWith("[")) return trimmed;
  // Inline JSON that is not an array: never treat (and quote) it as a file name.
  if (/^[{"]/.test(trimmed)) throw new UpstreamsConfigError(`${variable} must be a JSON array of entries (or the path of a JSON file)`);
  try {
    return readFileSync(trimmed, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "read error";
    throw new UpstreamsConfigError(`${variable}: cannot read the file '${trimmed}' (${code}); give a JSON array or the path of a JSON file`);
  }
}

/** JSON.parse without echoing the text (V8's messages quote it, and the text holds keys). */
function parseJson(text: string, variable: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const where = /position (\d+)(?: \(line (\d+) column (\d+)\))?/.exec(err instanceof Error ? err.message : "");
    const at = where ? (where[2] ? ` at line ${where[2]} column ${where[3]}` : ` at position ${where[1]}`) : "";
    throw new UpstreamsConfigError(`${variable} is not valid JSON${at}`);
  }
}

/** A host[:port] value, lowercased, or null when it is not one (no scheme, path, user or query). */
function normalizeHost(value: string): string | null {
  if (/[/@?#\s\\]/.test(value)) return null;
  let url: URL;
  try {
    url = new URL(`http://${value}`);
  } catch {
    return null;
  }
  if (url.hostname === "" || url.pathname !== "/") return null;
  const lower = value.toLowerCase();
  // `URL` drops :80 for http; keep what the operator wrote, once it is known to be a host[:port].
  return url.host === lower || `${url.host}:80` === lower ? lower : null;
}

/** Parses one already JSON-decoded entry; `label` names it in messages (`UPSTREAMS[2] (name "fal-main")`). */
function parseEntry(raw: unknown, index: number, lookup: (name: string) => string | undefined): UpstreamSource {
  const named = raw !== null && typeof raw === "object" && !Array.isArray(raw) ? (raw as Record<string, unknown>).name : undefined;
  const label = `UPSTREAMS[${index}]${typeof named === "string" && /^[a-z0-9-]{1,64}$/.test(named) ? ` (name "${named}")` : ""}`;
  const fail = (field: string, problem: string): never => {
    throw new UpstreamsConfigError(`${label}: field ${field} ${problem}`);
  };
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new UpstreamsConfigError(`${label}: must be a JSON object {name, protocol, base_url, api_key, families, ...}`);
  }
  const errors = [...Value.Errors(EntrySchema, raw)];
  if (errors.length > 0) {
    const missing = errors.find((e) => e.keyword === "required");
    if (missing) {
      const props = (missing.params as { requiredProperties?: string[] }).requiredProperties ?? [];
      fail(props[0] ?? "(unknown)", "is required");
    }
    const extra = errors.find((e) => e.keyword === "additionalProperties" || (e.keyword === "boolean" && e.instancePath.split("/").length === 2));
    if (extra) {
      const props = (extra.params as { additionalProperties?: string[] }).additionalProperties;
      const field = props?.[0] ?? fieldOf(extra.instancePath);
      fail(JSON.stringify(field).slice(0, 80), `is not a field of an entry (fields: ${Object.keys(EntrySchema.properties).join(", ")})`);
    }
    const first = errors[0]!;
    const field = fieldOf(first.instancePath);
    fail(field, describeSchemaError(field.split(/[[]/)[0]!, first.keyword, first.message));
  }
  const e = raw as Entry;

  let url: URL;
  try {
    url = new URL(e.base_url);
  } catch {
    return fail("base_url", "must be an absolute http(s) URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") fail("base_url", "must be an http or https URL");
  if (url.username !== "" || url.password !== "") fail("base_url", "must not carry credentials (the key goes in api_key)");
  if (url.search !== "" || url.hash !== "") fail("base_url", "must not have a query or a fragment");

  let apiKey = e.api_key;
  if (apiKey.startsWith("env:")) {
    const variable = apiKey.slice(4);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(variable)) fail("api_key", "must be a literal key or env:VARNAME with a valid variable name");
    const value = lookup(variable);
    if (value === undefined || value === "") fail("api_key", `names the environment variable ${variable}, which is not set`);
    apiKey = value as string;
  }

  const allowed = PROTOCOL_FAMILIES[e.protocol];
  const seen = new Set<string>();
  e.families.forEach((family, i) => {
    if (!UPSTREAM_FAMILIES.includes(family)) {
      fail(`families[${i}]`, `'${family.slice(0, 64)}' is not a family (families: ${UPSTREAM_FAMILIES.join(", ")})`);
    }
    if (!allowed.includes(family)) fail(`families[${i}]`, `'${family}' cannot be served by protocol ${e.protocol} (it serves ${allowed.join(", ")})`);
    if (seen.has(family)) fail(`families[${i}]`, `'${family}' is listed twice`);
    seen.add(family);
  });

  const catalogFamilies = new Set(e.families.map(catalogFamilyOf));
  for (const key of Object.keys(e.models ?? {})) {
    const id = key.endsWith("/image") ? key.slice(0, -"/image".length) : key;
    const family = MODELS.find((m) => m.id === id)?.family ?? TEXT_MODELS.find((m) => m.id === id)?.family;
    const shown = JSON.stringify(key.slice(0, 80));
    if (family === undefined) fail(`models[${shown}]`, "does not name a catalog model id (or '<model id>/image')");
    if (!catalogFamilies.has(family as string)) fail(`models[${shown}]`, "names a model of a family this source does not serve");
  }

  const trustedHosts = (e.trusted_hosts ?? []).map((h, i) => {
    const host = normalizeHost(h);
    if (host === null) return fail(`trusted_hosts[${i}]`, "must be a host or host:port (no scheme, path or user)");
    return host;
  });

  return redacted({
    name: e.name,
    protocol: e.protocol,
    baseUrl: e.base_url.replace(/\/+$/, ""),
    apiKey,
    families: [...e.families],
    models: { ...(e.models ?? {}) },
    timeoutMs: e.timeout_s === undefined ? null : Math.round(e.timeout_s * 1000),
    maxConcurrency: e.max_concurrency ?? null,
    trustedHosts,
    origin: "UPSTREAMS",
  });
}

const INSPECT = Symbol.for("nodejs.util.inspect.custom");

/** Makes `JSON.stringify` and `util.inspect` of a source show `[redacted]` for its key (not enumerable). */
function redacted(source: UpstreamSource): UpstreamSource {
  const safe = () => ({ ...source, apiKey: "[redacted]" });
  Object.defineProperty(source, "toJSON", { value: safe, enumerable: false });
  Object.defineProperty(source, INSPECT, { value: safe, enumerable: false });
  return source;
}

/**
 * Parses `UPSTREAMS` (D25). `setting` is the variable's value (inline JSON array, or the path of a JSON
 * file when it does not start with `[`); unset or empty means no source. `lookup` resolves `env:VARNAME`
 * keys. Returns the sources in file order. Throws {@link UpstreamsConfigError} naming the entry (index
 * and name) and the field: bad JSON, an unreadable file, a schema error, an unknown protocol or family, a
 * protocol/family pairing D25 does not allow, a repeated name, a `models` key that is not a model of the
 * entry's families, a bad host, a non-http(s) `base_url`, or a key variable that is not set.
 */
export function parseUpstreams(setting: string | null | undefined, lookup: (name: string) => string | undefined): UpstreamSource[] {
  if (setting === null || setting === undefined || setting.trim() === "") return [];
  const list = parseJson(readSettingText(setting, "UPSTREAMS"), "UPSTREAMS");
  if (!Array.isArray(list)) throw new UpstreamsConfigError("UPSTREAMS must be a JSON array of entries");
  const sources = list.map((raw: unknown, i: number) => parseEntry(raw, i, lookup));
  const first = new Map<string, number>();
  sources.forEach((s, i) => {
    const earlier = first.get(s.name);
    if (earlier !== undefined) {
      throw new UpstreamsConfigError(`UPSTREAMS[${i}] (name "${s.name}"): field name repeats the name of UPSTREAMS[${earlier}]`);
    }
    first.set(s.name, i);
  });
  return sources;
}

/**
 * Appends the `TEXT_UPSTREAMS` entries to `sources` as `openai` sources (D25): families are the entry's
 * families, or every catalog text family when it names none; names as the text fallback plan has them
 * (the entry's name, `name#<index>` when repeated). A family's sources stay in order: the `UPSTREAMS`
 * entries first, then the `TEXT_UPSTREAMS` ones. Throws {@link UpstreamsConfigError} when a
 * `TEXT_UPSTREAMS` name equals an `UPSTREAMS` name.
 */
export function mergeTextUpstreams(sources: readonly UpstreamSource[], textUpstreams: Config["textUpstreams"]): UpstreamSource[] {
  const upstreamNames = new Set(sources.map((s) => s.name));
  const textNames = new Set<string>();
  const text = textUpstreams.map((u, i): UpstreamSource => {
    let name = textUpstreams.findIndex((o) => o.name === u.name) === i ? u.name : `${u.name}#${i}`;
    if (upstreamNames.has(name)) {
      throw new UpstreamsConfigError(`TEXT_UPSTREAMS[${i}] (name "${name}"): field name is also the name of an UPSTREAMS entry`);
    }
    if (textNames.has(name)) name = `${name}#${i}`;
    textNames.add(name);
    return redacted({
      name,
      protocol: "openai",
      baseUrl: u.baseUrl,
      apiKey: u.apiKey,
      families: u.families === null ? [...TEXT_FAMILIES] : [...u.families],
      models: {},
      timeoutMs: u.timeoutMs,
      maxConcurrency: null,
      trustedHosts: [],
      origin: "TEXT_UPSTREAMS",
    });
  });
  return [...sources, ...text];
}

/**
 * Every source of a configuration: `UPSTREAMS` (config.upstreams, parsed here) followed by
 * `TEXT_UPSTREAMS`. Called once when the services start; throws {@link UpstreamsConfigError} (see
 * {@link parseUpstreams}, {@link mergeTextUpstreams}), which stops the start.
 */
export function loadUpstreams(config: Pick<Config, "upstreams" | "textUpstreams">): UpstreamSource[] {
  return mergeTextUpstreams(parseUpstreams(config.upstreams.setting, config.upstreams.lookup), config.textUpstreams);
}
