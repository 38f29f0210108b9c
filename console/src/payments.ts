/**
 * Whether this gateway takes card top-ups (D33), as the server says: the `payments` of
 * `GET /v1/capabilities` (`card_top_ups`, with the smallest and largest top-up when on). Asking there, not
 * `GET /v1/billing/checkout` (404 when payments are off), leaves no failed request in the browser's console
 * (issue 42). Read once per ten minutes and shared by the pages that offer a top-up (overview, billing), so
 * an action is offered only when it can work.
 */
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./api.ts";

/** What the console knows about card top-ups. */
export interface Payments {
  /** `on` with the limits, `off`, `asking`, or `unknown` (the capabilities could not be read: a 429 say). */
  state: "asking" | "on" | "off" | "unknown";
  /** The top-up limits in USD when `on`. */
  limits: { min: number; max: number } | null;
  /** Records that payments are off (a checkout answered 404: the gateway changed since the page read it). */
  setOff: () => void;
}

interface Settings {
  state: "on" | "off";
  limits: { min: number; max: number } | null;
}

/** The state of card top-ups on this gateway (see the file's comment). */
export function usePayments(): Payments {
  const queryClient = useQueryClient();
  const settings = useQuery({
    queryKey: ["checkout-settings"],
    queryFn: async (): Promise<Settings> => {
      const { payments } = await unwrap(api.GET("/v1/capabilities"));
      if (!payments.card_top_ups || payments.min_usd === null || payments.max_usd === null) return { state: "off", limits: null };
      return { state: "on", limits: { min: payments.min_usd, max: payments.max_usd } };
    },
    staleTime: 10 * 60_000,
    retry: false,
  });
  return {
    state: settings.isPending ? "asking" : settings.isError ? "unknown" : settings.data.state,
    limits: settings.data?.limits ?? null,
    setOff: () => queryClient.setQueryData<Settings>(["checkout-settings"], { state: "off", limits: null }),
  };
}
