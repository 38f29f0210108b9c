/** Inline displays of money and time, formatted by format.ts. */
import { formatDateTime, formatUsd, formatUsdCents } from "../format.ts";

/**
 * An amount in USD: at full precision (D7: up to 6 decimals, never rounded to cents), or with `cents`
 * to the cent for summaries (balance, totals, job cards), the exact amount then in the tooltip when it
 * differs.
 */
export function Usd({ amount, cents = false }: { amount: number | null | undefined; cents?: boolean }) {
  if (amount === null || amount === undefined) return <span className="usd">—</span>;
  const exact = formatUsd(amount);
  if (!cents) return <span className="usd">{exact}</span>;
  const rounded = formatUsdCents(amount);
  return (
    <span className="usd" title={rounded === exact ? undefined : exact}>
      {rounded}
    </span>
  );
}

/**
 * What a call or job cost, as its mode says (D32): a live one's amount, or for a test-mode key the price
 * it would have had and "no money moved" (never "charged").
 */
export function Charge({ amount, mode, cents = false }: { amount: number | null | undefined; mode: "live" | "test"; cents?: boolean }) {
  if (mode === "live") return <Usd amount={amount} cents={cents} />;
  return (
    <span className="charge-test">
      <span className="mode-test">test: no money moved</span>
      {amount !== null && amount !== undefined && (
        <small>
          {" "}
          (priced <Usd amount={amount} cents={cents} />)
        </small>
      )}
    </span>
  );
}

/** An ISO instant in the browser's time zone; the exact instant is in `dateTime` and the tooltip. */
export function DateTime({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span>—</span>;
  return (
    <time dateTime={iso} title={iso}>
      {formatDateTime(iso)}
    </time>
  );
}
