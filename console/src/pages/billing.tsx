/**
 * Billing: the balance, a card top-up through Stripe Checkout (D33) and the low-balance alert (D34).
 *
 * Top-up: an amount (presets or typed) and "Continue to payment", which opens a Checkout Session
 * (`POST /v1/billing/checkout` with this page's own return addresses) and sends the browser to Stripe's
 * page; Stripe sends it back here with `?topup=success|cancel` (TopupNotice.tsx). A gateway without
 * `STRIPE_SECRET_KEY` answers 404 to a checkout; the page asks first (`usePayments()`: the `payments` of
 * `GET /v1/capabilities`, which answers 200 either way), and then shows the form with the limits or a
 * sentence instead of it.
 *
 * Alert: `GET`/`PUT /v1/billing/alerts`: the threshold, whether it is armed, saving and removing it; the
 * `balance.low` event goes to the webhook endpoints that take it (D31), and the page says how many do.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { Link, useHref } from "react-router";
import { api, GatewayError, unwrap } from "../api.ts";
import { FieldError, fieldErrors, OtherError } from "../components/FieldError.tsx";
import { QueryView } from "../components/states.tsx";
import { TopupNotice } from "../components/TopupNotice.tsx";
import { Usd } from "../components/values.tsx";
import { formatUsd, pluralNoun } from "../format.ts";
import { parseNumberInput } from "../key-controls.ts";
import type { PageMeta } from "../pages.ts";
import { usePayments } from "../payments.ts";
import { can, useRole } from "../roles.ts";

export const page: PageMeta = { path: "/billing", title: "Billing", group: "customer", order: 10, section: "billing" };

/** The preset amounts of a top-up, USD. */
const PRESETS = [10, 25, 100];

function TopUp() {
  const { state, limits, setOff } = usePayments();
  const billingHref = useHref("/billing");
  const [amount, setAmount] = useState("25");
  const checkout = useMutation({
    mutationFn: () => {
      const back = (result: string) => `${window.location.origin}${billingHref}?topup=${result}`;
      return unwrap(api.POST("/v1/billing/checkout", { body: { amount_usd: parseNumberInput(amount) ?? 0, success_url: back("success"), cancel_url: back("cancel") } }));
    },
    // To Stripe's page; the mutation stays pending (the button busy) until the browser leaves.
    onSuccess: (session) => new Promise<never>(() => window.location.assign(session.url)),
    onError: (err) => {
      if (err instanceof GatewayError && err.status === 404) setOff();
    },
  });
  // Back from Stripe's page, the browser may show this page from its cache, the button still busy: free it.
  const { reset } = checkout;
  useEffect(() => {
    const shown = (e: PageTransitionEvent) => {
      if (e.persisted) reset();
    };
    window.addEventListener("pageshow", shown);
    return () => window.removeEventListener("pageshow", shown);
  }, [reset]);
  const errors = fieldErrors(checkout.error, ["amount_usd"], "topup");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    checkout.mutate();
  };
  return (
    <section aria-labelledby="topup-title">
      <h2 id="topup-title">Top up</h2>
      {state === "off" ? (
        <p className="notice">Card top-ups are not enabled on this gateway; ask the operator for a deposit.</p>
      ) : (
        // noValidate: the min and max are hints; an amount outside them gets the gateway's message at its field.
        <form onSubmit={submit} aria-labelledby="topup-title" className="narrow" noValidate>
          <p>Pay by card with Stripe; the amount is added to your balance once Stripe confirms the payment, and counts towards your tier.</p>
          <div role="group" aria-label="Preset amounts" className="presets">
            {PRESETS.map((p) => (
              <button key={p} type="button" className="secondary outline" aria-pressed={parseNumberInput(amount) === p} onClick={() => setAmount(String(p))}>
                {formatUsd(p).replace(/\.00$/, "")}
              </button>
            ))}
          </div>
          <label htmlFor="topup-amount">Amount (USD)</label>
          <input
            id="topup-amount"
            type="number"
            min={limits?.min ?? 0}
            {...(limits ? { max: limits.max } : {})}
            step={0.01}
            inputMode="decimal"
            required
            value={amount}
            onChange={(e) => setAmount(e.target.value)}
            {...errors.input("amount_usd", "topup-amount-help")}
          />
          <small id="topup-amount-help">
            {limits ? `From ${formatUsd(limits.min)} to ${formatUsd(limits.max)}, in whole cents. ` : "In whole cents. "}
            Stripe's page shows the total before you pay.
          </small>
          <FieldError errors={errors} field="amount_usd" />
          <OtherError errors={errors} />
          <button type="submit" aria-busy={checkout.isPending || state === "asking"} disabled={checkout.isPending || state === "asking"}>
            Continue to payment
          </button>
        </form>
      )}
    </section>
  );
}

function Balance() {
  const me = useQuery({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/v1/auth/me")) });
  return (
    <section aria-labelledby="billing-balance-title">
      <h2 id="billing-balance-title">Balance</h2>
      <QueryView query={me}>
        {(m) => (
          <>
            <p className="big-number">
              <Usd amount={m.balance_usd} cents />
            </p>
            <p>
              <small>
                Deposited in total: <Usd amount={m.total_deposits_usd} cents />. Every deposit and charge, to the micro-dollar, is in the{" "}
                <Link to="/ledger">ledger</Link>.
              </small>
            </p>
          </>
        )}
      </QueryView>
    </section>
  );
}

/** How many active webhook endpoints take `balance.low`. */
function useLowBalanceEndpoints(): number | undefined {
  const endpoints = useQuery({ queryKey: ["webhooks"], queryFn: () => unwrap(api.GET("/v1/webhooks")) });
  return endpoints.data?.data.filter((ep) => !ep.disabled && ep.events.includes("balance.low")).length;
}

/** The alert's state, and with `mayEdit` (admins and owners, D41) the form that sets it. */
function LowBalanceAlert({ mayEdit }: { mayEdit: boolean }) {
  const queryClient = useQueryClient();
  const alerts = useQuery({ queryKey: ["alerts"], queryFn: () => unwrap(api.GET("/v1/billing/alerts")) });
  const endpoints = useLowBalanceEndpoints();
  const [threshold, setThreshold] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (low: number | null) => unwrap(api.PUT("/v1/billing/alerts", { body: { low_balance_usd: low } })),
    onSuccess: (data) => {
      queryClient.setQueryData(["alerts"], data);
      setThreshold(null);
    },
  });
  const errors = fieldErrors(save.error, ["low_balance_usd"], "alert");
  return (
    <section aria-labelledby="alert-title">
      <h2 id="alert-title">Low-balance alert</h2>
      <QueryView query={alerts}>
        {(a) => {
          const value = threshold ?? (a.low_balance_usd === null ? "" : String(a.low_balance_usd));
          const submit = (e: FormEvent) => {
            e.preventDefault();
            save.mutate(parseNumberInput(value));
          };
          return (
            <>
              <p role="status">
                {a.low_balance_usd === null ? (
                  "No alert is set."
                ) : a.armed ? (
                  <>
                    Armed: a <code>balance.low</code> event is sent when the balance falls below <Usd amount={a.low_balance_usd} />.
                  </>
                ) : (
                  <>
                    Sent: the balance is below <Usd amount={a.low_balance_usd} />. The alert is armed again once the balance is back above it.
                  </>
                )}
              </p>
              {mayEdit && (
              <form onSubmit={submit} aria-labelledby="alert-title" className="narrow">
                <label htmlFor="alert-threshold">Alert threshold (USD)</label>
                <input
                  id="alert-threshold"
                  type="number"
                  min={0}
                  step="any"
                  inputMode="decimal"
                  required
                  value={value}
                  onChange={(e) => setThreshold(e.target.value)}
                  {...errors.input("low_balance_usd", "alert-threshold-help")}
                />
                <small id="alert-threshold-help">
                  The event goes to your <Link to="/webhooks">webhook endpoints</Link> that take <code>balance.low</code>
                  {endpoints === undefined ? "." : endpoints === 0 ? ": none does yet." : `: ${endpoints} ${pluralNoun(endpoints, "does", "do")}.`}
                </small>
                <FieldError errors={errors} field="low_balance_usd" />
                <OtherError errors={errors} />
                <div className="pager">
                  <button type="submit" aria-busy={save.isPending} disabled={save.isPending}>
                    Save alert
                  </button>
                  {a.low_balance_usd !== null && (
                    <button type="button" className="secondary outline" disabled={save.isPending} onClick={() => save.mutate(null)}>
                      Remove alert
                    </button>
                  )}
                </div>
              </form>
              )}
            </>
          );
        }}
      </QueryView>
    </section>
  );
}

export default function Billing() {
  const role = useRole();
  return (
    <>
      <TopupNotice />
      <Balance />
      {can(role, "topUp") ? (
        <TopUp />
      ) : (
        role !== undefined && (
          <p className="notice">
            Top-ups and the low-balance alert are managed by this organization's admins and owners; your role is {role}.
          </p>
        )
      )}
      <LowBalanceAlert mayEdit={can(role, "alerts")} />
    </>
  );
}
