/**
 * What opening a realtime socket takes (D42, D43), the same for speech and transcription: one request of
 * the rpm windows and one slot of the tier's audio pool for the socket's life (D12), then the socket's one
 * hold (billing/metered-hold.ts). A refusal gives back what was taken before it.
 */
import type { BalanceEvents } from "../../billing/balance-events.ts";
import type { Executor } from "../../billing/ledger.ts";
import { MeteredHold, type MeterPricing, realtimeInsufficient } from "../../billing/metered-hold.ts";
import type { PaidCalls } from "../../billing/paid-call.ts";
import type { CallContext, UsageKind, Units } from "../../billing/usage.ts";
import type { AudioPool } from "../../catalog/types.ts";
import type { CallGuard } from "../../limits/limiter.ts";

/** What admission needs of the gateway. */
export interface AdmissionDeps {
  db: Executor;
  paidCalls: PaidCalls;
  events?: BalanceEvents | null;
  onBackgroundError?: (err: unknown) => void;
}

/** A socket admitted: its hold and the function that gives its pool slot back (call it once, at the end). */
export interface Admitted {
  meter: MeteredHold;
  releaseSlot: () => Promise<void>;
}

/**
 * Admits a socket of `model` (its id and audio pool) for `accountId`: the guard's windows and pool slot,
 * then the hold priced by `pricing`, with the usage record of `kind` starting at `units`; `unit` names one
 * unit in the 402's words ("character", "second of audio").
 * @throws AppError 403 `model_not_allowed`, 429 `rate_limited` (windows, pool), 402 (`billing_error`,
 *   `key_spend_limit`); nothing is held or taken then.
 */
export async function admitSocket(
  deps: AdmissionDeps,
  a: { accountId: string; model: { id: string; audioPool: AudioPool }; call: CallContext; guard: CallGuard; kind: UsageKind; units: Units; pricing: MeterPricing; heartbeatMs: number; unit: string },
): Promise<Admitted> {
  const releaseSlot = await a.guard.admit(a.model.id, a.model.audioPool);
  try {
    const meter = await MeteredHold.open(
      { db: deps.db, paidCalls: deps.paidCalls, events: deps.events ?? null, onPersistError: deps.onBackgroundError },
      { accountId: a.accountId, model: a.model.id, usage: { ...a.call, kind: a.kind, units: a.units }, pricing: a.pricing, heartbeatMs: a.heartbeatMs },
      realtimeInsufficient(a.unit),
    );
    return { meter, releaseSlot };
  } catch (err) {
    await releaseSlot();
    throw err;
  }
}
