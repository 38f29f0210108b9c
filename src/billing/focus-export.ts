/**
 * The FOCUS 1.2 export of an organization's usage (issue 44 point 4; D29): `GET /v1/usage/export?format=focus`,
 * the FinOps Open Cost and Usage Specification's cost and usage dataset, one row per UTC day, model,
 * member and key. Every value is a string or null (the CSV writes null as an empty field).
 *
 * What a row holds (the columns in {@link FOCUS_COLUMNS} order; the choices are docs/decisions.md's, D29):
 * - **Rows.** The charged calls (usage records `succeeded`: the charge was captured and kept) of one UTC
 *   day (`ChargePeriodStart` midnight UTC, `ChargePeriodEnd` the next), one model, one member and one key,
 *   so that the row's `Tags` are exact: `{"gateway/org_id", "gateway/user_id", "gateway/key_id"}` (null for
 *   a record that names no member, and for a call made without a key). Failed, expired, refunded and
 *   unfinished calls charged nothing and have no row. `x_Requests` counts the calls.
 * - **Costs** in USD (`BillingCurrency`), decimal text with at most 6 decimals. `BilledCost` and
 *   `EffectiveCost` are what the ledger charged (the records' `cost_micros`, written in the capture's
 *   transaction, docs/architecture.md invariant 9). `ListCost` and `ContractedCost` are the catalog price
 *   of the same calls: every charge is the catalog's quote of what was delivered (D7, D18), with no
 *   negotiated or commitment discounts, so they equal `BilledCost`. Test-mode rows (D32, `mode=test`) move
 *   no money: `BilledCost` and `EffectiveCost` 0, `ListCost` and `ContractedCost` the catalog price.
 * - **Quantities.** `ConsumedQuantity`/`ConsumedUnit` are the usage log's units (D29): `Characters`,
 *   `Seconds`, `Images`, `Tokens` (input, cached included, plus output), `Minutes`, or `Requests` for voice
 *   design and cloning. `PricingQuantity`/`PricingUnit` are in the unit of the model's `/v1/pricing` row:
 *   `1000 Characters`, `Seconds`, `Minutes`, `Images`, `Songs`, `Requests`, `1000000 Tokens`. No unit price
 *   column: a call's price is rounded to the micro-dollar per call (D7) and chat and some image models
 *   price by more than one unit, so no single unit price times a day's quantity gives the cost.
 * - **Who and what.** `BillingAccountId`/`Name` the organization (D41); `ProviderName`, `PublisherName`
 *   and `InvoiceIssuerName` the gateway's operator (`FOCUS_PROVIDER_NAME`); `ServiceName` what the call
 *   was (`Text to Speech`, `Image Generation`, ...) in `ServiceCategory` `AI and Machine Learning`;
 *   `SkuId` and `SkuPriceId` the model id, which is its `/v1/pricing` row id. `BillingPeriodStart`/`End`
 *   is the UTC calendar month holding the day (the balance is prepaid: there are no invoices).
 *   `ChargeCategory` `Usage`, `ChargeClass` null (nothing is a correction), `ChargeFrequency` `Usage-Based`.
 */
import { getModel } from "../catalog/models.ts";
import { getTextModel } from "../catalog/text-models.ts";
import type { KeyMode, UsageKind } from "../storage/schema.ts";
import { errors } from "../errors.ts";
import { formatUsd, type Micros } from "../money.ts";
import type { Executor } from "./executor.ts";
import { type ChargedSum, chargedSums, DAY_MS, organizationName } from "./focus-export.repository.ts";

/** The FOCUS version the export conforms to. */
export const FOCUS_VERSION = "1.2";

/**
 * The export's columns in order: the FOCUS columns alphabetically (the 21 mandatory ones of FOCUS 1.2 and
 * the conditional and recommended ones that apply), then the custom `x_` ones.
 */
export const FOCUS_COLUMNS = [
  "BilledCost",
  "BillingAccountId",
  "BillingAccountName",
  "BillingCurrency",
  "BillingPeriodEnd",
  "BillingPeriodStart",
  "ChargeCategory",
  "ChargeClass",
  "ChargeDescription",
  "ChargeFrequency",
  "ChargePeriodEnd",
  "ChargePeriodStart",
  "ConsumedQuantity",
  "ConsumedUnit",
  "ContractedCost",
  "EffectiveCost",
  "InvoiceIssuerName",
  "ListCost",
  "PricingQuantity",
  "PricingUnit",
  "ProviderName",
  "PublisherName",
  "ServiceCategory",
  "ServiceName",
  "ServiceSubcategory",
  "SkuId",
  "SkuPriceId",
  "Tags",
  "x_Requests",
] as const;

/** One column of the export. */
export type FocusColumn = (typeof FOCUS_COLUMNS)[number];
/** One row: every column's value as text, or null. */
export type FocusRow = Record<FocusColumn, string | null>;

/** The keys of a row's `Tags` (provider-defined tags, prefixed `gateway/` as FOCUS asks). */
export const TAG_KEYS = { org: "gateway/org_id", user: "gateway/user_id", key: "gateway/key_id" } as const;

/** The longest window one export covers, days. */
export const MAX_EXPORT_DAYS = 366;

/** What each kind of call is, as a FOCUS service (`ServiceName`, and its `ServiceSubcategory`). */
const SERVICES: Record<UsageKind, { name: string; subcategory: string }> = {
  speech: { name: "Text to Speech", subcategory: "Generative AI" },
  music: { name: "Music Generation", subcategory: "Generative AI" },
  sfx: { name: "Sound Effects", subcategory: "Generative AI" },
  voice_design: { name: "Voice Design", subcategory: "Generative AI" },
  voice_clone: { name: "Voice Cloning", subcategory: "Generative AI" },
  transcription: { name: "Speech to Text", subcategory: "Natural Language Processing" },
  audio_understanding: { name: "Audio Understanding", subcategory: "Generative AI" },
  chat: { name: "Chat Completions", subcategory: "Generative AI" },
  image: { name: "Image Generation", subcategory: "Generative AI" },
  video: { name: "Video Generation", subcategory: "Generative AI" },
};

/** How a row's `ChargeDescription` names its pricing unit. */
const PRICED_PER: Record<string, string> = {
  "1000 Characters": "priced per 1000 characters",
  Seconds: "priced per second",
  Minutes: "priced per minute",
  Images: "priced per image",
  Songs: "priced per song",
  Requests: "priced per call",
  "1000000 Tokens": "priced per million input, cached input and output tokens",
};

/** A quantity in a unit: an exact integer count of `1 / 10^scale` of the unit. */
interface Quantity {
  unit: string;
  count: number;
  scale: number;
}

/** `count / 10^scale` as exact decimal text without trailing zeros (`1500, 3` -> `1.5`, `23, 3` -> `0.023`). */
export function decimalText(count: number, scale: number): string {
  const neg = count < 0;
  const digits = String(Math.abs(Math.trunc(count))).padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale).replace(/0+$/, "");
  return `${neg ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`;
}

/**
 * Transcription and understanding count billed `minutes`; a realtime socket (D43) counts started `seconds`.
 * A group holding both reads in seconds (a billed minute is 60).
 */
function minutesOrSeconds(g: ChargedSum): Quantity {
  const { minutes, duration_ms: ms } = g.units;
  if (ms === null) return { unit: "Minutes", count: minutes ?? 0, scale: 0 };
  return { unit: "Seconds", count: (minutes ?? 0) * 60_000 + ms, scale: 3 };
}

/** The group's units as FOCUS consumed quantity (D29's units; `Requests` where a kind has none). */
function consumed(g: ChargedSum): Quantity {
  const u = g.units;
  const calls = { unit: "Requests", count: g.requests, scale: 0 };
  switch (g.kind) {
    case "speech":
      return u.characters === null ? calls : { unit: "Characters", count: u.characters, scale: 0 };
    case "music":
    case "sfx":
    case "video":
      return u.duration_ms === null ? calls : { unit: "Seconds", count: u.duration_ms, scale: 3 };
    case "image":
      return u.images === null ? calls : { unit: "Images", count: u.images, scale: 0 };
    case "chat":
      return u.input_tokens === null && u.output_tokens === null ? calls : { unit: "Tokens", count: (u.input_tokens ?? 0) + (u.output_tokens ?? 0), scale: 0 };
    case "transcription":
    case "audio_understanding":
      return u.minutes === null && u.duration_ms === null ? calls : minutesOrSeconds(g);
    default:
      return calls;
  }
}

/** The group's quantity in the unit of its model's `/v1/pricing` row (its consumed units for a model no longer listed). */
function priced(g: ChargedSum): Quantity {
  const model = getModel(g.model);
  const u = g.units;
  if (model) {
    switch (model.pricing.mode) {
      case "per-char":
        return u.characters === null ? consumed(g) : { unit: "1000 Characters", count: u.characters, scale: 3 };
      case "per-second":
        return u.duration_ms === null ? consumed(g) : { unit: "Seconds", count: u.duration_ms, scale: 3 };
      case "per-minute":
        return consumed(g);
      case "per-image":
      case "per-quality":
      case "per-mp":
        return u.images === null ? consumed(g) : { unit: "Images", count: u.images, scale: 0 };
      case "per-song":
        return { unit: "Songs", count: g.requests, scale: 0 };
      case "per-call":
        return { unit: "Requests", count: g.requests, scale: 0 };
    }
  }
  if (g.kind === "chat" && getTextModel(g.model)) {
    return { unit: "1000000 Tokens", count: (u.input_tokens ?? 0) + (u.output_tokens ?? 0), scale: 6 };
  }
  return consumed(g);
}

/** The display name of a model id (the id itself for one no longer in the catalog). */
function modelName(id: string): string {
  return getModel(id)?.name ?? getTextModel(id)?.name ?? id;
}

/** An instant (ms since the epoch) as FOCUS date/time text: `YYYY-MM-DDTHH:mm:ssZ`, UTC. */
export function focusDateTime(t: number): string {
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The UTC calendar month holding the instant `t`: its first ms and the next month's. */
function utcMonth(t: number): { start: number; end: number } {
  const d = new Date(t);
  return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/** The options of {@link focusExport}. */
export interface FocusExportOptions {
  /** The first UTC day's midnight, ms since the epoch. */
  from: number;
  /** The midnight after the last UTC day (exclusive), ms since the epoch. */
  to: number;
  /** `live` (default of the route) or `test` (D32): rows of test-mode calls, which billed nothing. */
  mode: KeyMode;
  /** `ProviderName`, `PublisherName` and `InvoiceIssuerName` (`FOCUS_PROVIDER_NAME`). */
  providerName: string;
}

/**
 * The organization's FOCUS 1.2 rows for the UTC days `[from, to)` (see the module comment), ordered by
 * day, model, member and key. Reads only: one grouped range scan of the usage log and the organization's
 * name.
 */
export async function focusExport(db: Executor, accountId: string, opts: FocusExportOptions): Promise<FocusRow[]> {
  const groups = await chargedSums(db, accountId, opts);
  const accountName = (await organizationName(db, accountId)) ?? accountId;
  const test = opts.mode === "test";
  return groups.map((g) => {
    const start = g.day * DAY_MS;
    const month = utcMonth(start);
    const service = SERVICES[g.kind];
    const used = consumed(g);
    const pricing = priced(g);
    const list: Micros = g.costMicros;
    const billed: Micros = test ? 0 : g.costMicros;
    return {
      BilledCost: formatUsd(billed),
      BillingAccountId: accountId,
      BillingAccountName: accountName,
      BillingCurrency: "USD",
      BillingPeriodEnd: focusDateTime(month.end),
      BillingPeriodStart: focusDateTime(month.start),
      ChargeCategory: "Usage",
      ChargeClass: null,
      ChargeDescription: `${service.name} with ${modelName(g.model)} (${g.model}), ${PRICED_PER[pricing.unit] ?? `in ${pricing.unit}`}${test ? "; test mode, not billed" : ""}`,
      ChargeFrequency: "Usage-Based",
      ChargePeriodEnd: focusDateTime(start + DAY_MS),
      ChargePeriodStart: focusDateTime(start),
      ConsumedQuantity: decimalText(used.count, used.scale),
      ConsumedUnit: used.unit,
      ContractedCost: formatUsd(list),
      EffectiveCost: formatUsd(billed),
      InvoiceIssuerName: opts.providerName,
      ListCost: formatUsd(list),
      PricingQuantity: decimalText(pricing.count, pricing.scale),
      PricingUnit: pricing.unit,
      ProviderName: opts.providerName,
      PublisherName: opts.providerName,
      ServiceCategory: "AI and Machine Learning",
      ServiceName: service.name,
      ServiceSubcategory: service.subcategory,
      SkuId: g.model,
      SkuPriceId: g.model,
      Tags: JSON.stringify({ [TAG_KEYS.org]: accountId, [TAG_KEYS.user]: g.userId, [TAG_KEYS.key]: g.keyId }),
      x_Requests: String(g.requests),
    };
  });
}

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The UTC midnight starting the ISO date `value` (`YYYY-MM-DD`), or null when it is no valid date. */
function utcDay(value: string): number | null {
  const m = DATE_RE.exec(value);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const t = Date.UTC(y, mo - 1, d);
  const check = new Date(t);
  return check.getUTCFullYear() === y && check.getUTCMonth() === mo - 1 && check.getUTCDate() === d ? t : null;
}

/**
 * The window of an export from its `from` and `to` query values: UTC dates (`YYYY-MM-DD`), both days
 * included; `from` defaults to the first day of the current UTC month and `to` to the current UTC day
 * (`now`, ms since the epoch). Returns `[from, to)` as ms since the epoch.
 * @throws AppError 400 `invalid_request` naming `from` or `to`: not a date, `from` after `to`, or more
 *   than {@link MAX_EXPORT_DAYS} days.
 */
export function exportWindow(q: { from?: string; to?: string }, now: number = Date.now()): { from: number; to: number } {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const read = (value: string | undefined, bound: "from" | "to", def: number): number => {
    if (value === undefined) return def;
    const t = utcDay(value);
    if (t === null) throw errors.invalidRequest(`${bound} must be a UTC date (YYYY-MM-DD): the export covers whole UTC days.`, bound);
    return t;
  };
  const from = read(q.from, "from", utcMonth(today).start);
  const to = read(q.to, "to", today) + DAY_MS;
  if (from >= to) throw errors.invalidRequest("from must not be after to.", "from");
  if (to - from > MAX_EXPORT_DAYS * DAY_MS) throw errors.invalidRequest(`An export covers at most ${MAX_EXPORT_DAYS} days.`, "to");
  return { from, to };
}
