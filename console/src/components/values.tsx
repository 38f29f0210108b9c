/** Inline displays of money and time, formatted by format.ts. */
import { formatDateTime, formatUsd } from "../format.ts";

/** An amount in USD at full precision (D7: up to 6 decimals, never rounded to cents). */
export function Usd({ amount }: { amount: number | null | undefined }) {
  if (amount === null || amount === undefined) return <span className="usd">—</span>;
  return <span className="usd">{formatUsd(amount)}</span>;
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
