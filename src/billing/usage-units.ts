/**
 * The units of the usage log (D29), written once: the unit columns of `usage_records`, in the order the
 * API, the CSV of `GET /v1/usage` and every statement that writes or sums them list them, with the name
 * each has in the API and in a call's {@link Units}. Every module that enumerates the unit columns (the
 * record's insert and finish, the PostgreSQL one-statement and batch forms, the report's sums and views)
 * takes the list from here. A leaf of billing/: it imports nothing of billing.
 */

/** The unit columns of `usage_records` (storage/schema.ts), in API order. */
export const UNIT_COLUMNS = ["characters", "duration_ms", "images", "input_tokens", "output_tokens", "cached_tokens", "minutes"] as const;

/** One unit column of `usage_records`. */
export type UnitColumn = (typeof UNIT_COLUMNS)[number];

/** The value of every unit column: a count (seconds as milliseconds), or null where the unit does not apply. */
export type UnitValues = Record<UnitColumn, number | null>;

/** The unit names of the API (`units` of a record or group) and of the CSV's columns, in {@link UNIT_COLUMNS} order. */
export const UNIT_NAMES = ["characters", "seconds", "images", "input_tokens", "output_tokens", "cached_tokens", "minutes"] as const;

/** One unit name of the API. */
export type UnitName = (typeof UNIT_NAMES)[number];

/**
 * The units of a call (D29), whichever apply: speech `characters`; music, sound effects and video
 * `seconds`; images `images`; chat the three token counts (`inputTokens` includes `cachedTokens`, as
 * OpenAI's `prompt_tokens`); transcription and understanding billed `minutes`; voice design and cloning
 * none.
 */
export interface Units {
  characters?: number;
  seconds?: number;
  images?: number;
  inputTokens?: number;
  outputTokens?: number;
  cachedTokens?: number;
  minutes?: number;
}

/**
 * For each column: its API name, the key of {@link Units} it is written from, and how many stored units
 * make one API unit (1000 for seconds stored as milliseconds).
 */
export const UNIT_OF_COLUMN: Readonly<Record<UnitColumn, { name: UnitName; field: keyof Units; scale: number }>> = {
  characters: { name: "characters", field: "characters", scale: 1 },
  duration_ms: { name: "seconds", field: "seconds", scale: 1000 },
  images: { name: "images", field: "images", scale: 1 },
  input_tokens: { name: "input_tokens", field: "inputTokens", scale: 1 },
  output_tokens: { name: "output_tokens", field: "outputTokens", scale: 1 },
  cached_tokens: { name: "cached_tokens", field: "cachedTokens", scale: 1 },
  minutes: { name: "minutes", field: "minutes", scale: 1 },
};

/** The values of {@link UnitValues} in {@link UNIT_COLUMNS} order (statement parameters). */
export function unitValueList(v: UnitValues): (number | null)[] {
  return UNIT_COLUMNS.map((c) => v[c]);
}

/** Unit columns all null: a group with nothing summed yet. */
export function noUnits(): UnitValues {
  return Object.fromEntries(UNIT_COLUMNS.map((c) => [c, null])) as UnitValues;
}

/** The unit totals or values of a record or group, as the API shows them (absent when not applicable). */
export type UnitsView = Partial<Record<UnitName, number>>;

/** The API form of unit columns: seconds from milliseconds, nulls left out. */
export function unitsView(r: UnitValues): UnitsView {
  const out: UnitsView = {};
  for (const c of UNIT_COLUMNS) {
    const v = r[c];
    if (v !== null) out[UNIT_OF_COLUMN[c].name] = Number(v) / UNIT_OF_COLUMN[c].scale;
  }
  return out;
}
