/**
 * The simulator's voice design and cloning (D10): after a typical latency it answers a new upstream
 * voice id, deterministic per input so retries of the same request map to the same upstream voice.
 */
import { createHash } from "node:crypto";
import type { VoiceCloneRequest, VoiceCreationAdapter, VoiceDesignRequest } from "../types.ts";
import { simulateLatency } from "./delay.ts";

/** Typical latencies in seconds before `latencyScale`. */
const DESIGN_SEC = 3;
const CLONE_SEC = 5;

/** Simulated beta voice creation. */
export class SimulatedVoiceCreation implements VoiceCreationAdapter {
  readonly #latencyScale: number;

  constructor(latencyScale: number) {
    this.#latencyScale = latencyScale;
  }

  async designVoice(req: VoiceDesignRequest, signal?: AbortSignal): Promise<{ upstreamVoiceId: string }> {
    await simulateLatency(DESIGN_SEC, this.#latencyScale, req.simulate, signal);
    const h = createHash("sha256").update(JSON.stringify([req.description, req.name, req.gender, req.ageGroup])).digest("hex");
    return { upstreamVoiceId: `beta_designed_${h.slice(0, 16)}` };
  }

  async cloneVoice(req: VoiceCloneRequest, signal?: AbortSignal): Promise<{ upstreamVoiceId: string }> {
    await simulateLatency(CLONE_SEC, this.#latencyScale, req.simulate, signal);
    const h = createHash("sha256").update(req.audio).update(req.name ?? "").digest("hex");
    return { upstreamVoiceId: `beta_cloned_${h.slice(0, 16)}` };
  }
}
