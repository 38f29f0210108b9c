/**
 * Whether this gateway takes card top-ups (D33), as the server says: `GET /v1/billing/checkout` answers
 * the smallest and largest top-up when payments are on, 404 when they are off (no `STRIPE_SECRET_KEY`).
 * Read once per ten minutes and shared by the pages that offer a top-up (overview, billing), so an action
 * is offered only when it can work.
 */
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api } from "./api.ts";

/** What the console knows about card top-ups. */
export interface Payments {
  /** `on` with the limits, `off`, `asking`, or `unknown` (another answer, a 429 say). */
  state: "asking" | "on" | "off" | "unknown";
  /** The top-up limits in USD when `on`. */
  limits: { min: number; max: number } | null;
  /** Records that payments are off (a checkout answered 404). */
  setOff: () => void;
}

/** The state of card top-ups on this gateway (see the file's comment). */
export function usePayments(): Payments {
  const queryClient = useQueryClient();
  const settings = useQuery({
    queryKey: ["checkout-settings"],
    queryFn: async () => {
      const { data, response } = await api.GET("/v1/billing/checkout");
      if (response.status === 404) return { state: "off" as const, limits: null };
      if (data) return { state: "on" as const, limits: { min: data.min_usd, max: data.max_usd } };
      return { state: "unknown" as const, limits: null };
    },
    staleTime: 10 * 60_000,
    retry: false,
  });
  return {
    state: settings.isPending ? "asking" : settings.isError ? "unknown" : settings.data.state,
    limits: settings.data?.limits ?? null,
    setOff: () => queryClient.setQueryData(["checkout-settings"], { state: "off", limits: null }),
  };
}
