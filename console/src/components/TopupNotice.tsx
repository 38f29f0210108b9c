/**
 * The notice of a return from Stripe Checkout (D33): Stripe sends the customer back with `?topup=success`
 * or `?topup=cancel` (the billing page passes its own address; the gateway's default is the overview), and
 * the page says what happened. The deposit itself arrives by Stripe's webhook, so after a success the
 * balance (`["me"]`) is read again every few seconds for a minute. "Dismiss" removes the parameter.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { useSearchParams } from "react-router";

/** How often and how long the balance is read again after a paid top-up, ms. */
const REFRESH_EVERY_MS = 4_000;
const REFRESH_FOR_MS = 60_000;

export function TopupNotice() {
  const [params, setParams] = useSearchParams();
  const queryClient = useQueryClient();
  const topup = params.get("topup");
  useEffect(() => {
    if (topup !== "success") return;
    const started = Date.now();
    const timer = setInterval(() => {
      void queryClient.invalidateQueries({ queryKey: ["me"] });
      void queryClient.invalidateQueries({ queryKey: ["alerts"] });
      if (Date.now() - started >= REFRESH_FOR_MS) clearInterval(timer);
    }, REFRESH_EVERY_MS);
    return () => clearInterval(timer);
  }, [topup, queryClient]);
  if (topup !== "success" && topup !== "cancel") return null;
  const dismiss = () =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        next.delete("topup");
        return next;
      },
      { replace: true },
    );
  return (
    <div role="status" className={`notice topup-notice${topup === "success" ? " success" : ""}`}>
      <p>{topup === "success" ? "Payment received; your balance updates once Stripe confirms it." : "Top-up canceled: nothing was charged."}</p>
      <button type="button" className="secondary outline small" onClick={dismiss}>
        Dismiss
      </button>
    </div>
  );
}
