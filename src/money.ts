/**
 * Money as exact integer micro-USD (decision D7). 1 USD = 1_000_000 micro-USD.
 *
 * Every amount inside the gateway is a `Micros` (a safe integer). Conversion to and from decimal USD
 * happens only at the edges (JSON bodies, headers), and never through binary floating point
 * arithmetic on amounts.
 */

/** An amount in micro-USD: a safe integer. */
export type Micros = number;

export const MICROS_PER_USD = 1_000_000;

/**
 * Parses a decimal USD amount (a JSON number or a string such as "10", "0.405", "1e1") into micro-USD.
 * The value is read from its decimal text, so 0.1 + 0.2 style errors cannot creep in.
 * Returns null when the text is not a finite decimal with at most 6 fractional digits or is out of the
 * safe range.
 */
export function usdToMicros(value: number | string): Micros | null {
  let text: string;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return null;
    text = numberToPlainString(value);
  } else {
    text = value.trim();
  }
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) return null;
  const [, sign, whole, frac = ""] = m;
  const fracTrim = frac.replace(/0+$/, "");
  if (fracTrim.length > 6) return null;
  const micros = BigInt(whole) * 1_000_000n + BigInt(fracTrim.padEnd(6, "0") || "0");
  if (micros > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  const n = Number(micros);
  return sign === "-" ? -n : n;
}

/** A number's decimal text without exponent notation (1e-7 -> "0.0000001"). */
function numberToPlainString(value: number): string {
  const s = String(value);
  if (!/e/i.test(s)) return s;
  return value.toFixed(20).replace(/\.?0+$/, "");
}

/**
 * Formats micro-USD as a decimal USD string with at most 6 decimals and no trailing zeros
 * ("0.405", "12", "-0.000001"). Used in headers (D7).
 */
export function formatUsd(micros: Micros): string {
  const neg = micros < 0;
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_USD);
  const frac = abs % MICROS_PER_USD;
  let s = String(whole);
  if (frac !== 0) s += `.${String(frac).padStart(6, "0").replace(/0+$/, "")}`;
  return neg ? `-${s}` : s;
}

/**
 * micro-USD as a JSON number of USD. Exact for display: the decimal text of the returned number is the
 * 6-decimal value (JavaScript prints the shortest round-tripping text).
 */
export function microsToUsd(micros: Micros): number {
  return Number(formatUsd(micros));
}

/**
 * Divides `numerator / denominator` (integers, denominator > 0) rounding half-up (away from zero for
 * positive values), as D7 requires for every charge. Uses BigInt so products of large amounts stay exact.
 */
export function divRoundHalfUp(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError("denominator must be positive");
  const neg = numerator < 0n;
  const abs = neg ? -numerator : numerator;
  const q = (abs * 2n + denominator) / (denominator * 2n);
  return neg ? -q : q;
}

/** Rounds micro-USD half-up to a multiple of `step` micro-USD (1000 = 0.001 USD, D7 for imgB-2-pro). */
export function roundToStep(micros: Micros, step: Micros): Micros {
  return Number(divRoundHalfUp(BigInt(micros), BigInt(step)) * BigInt(step));
}
