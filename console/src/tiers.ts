/** Shared readings of a tier row (`TierRow`, D9), for the overview and the tiers page. */
import type { Schemas } from "./api.ts";
import { formatCount } from "./format.ts";

/**
 * Jobs of `kind` that may run at once, and queued behind them, as `4 (12)`; `none` when the tier has no
 * video; tier 4 shares one pool between image and video (`combined_media_concurrent`): `38 (60), shared`.
 */
export function tierJobs(t: Schemas["TierRow"], kind: "image" | "video"): string {
  if (t.combined_media_concurrent !== undefined) return `${formatCount(t.combined_media_concurrent)} (${formatCount(t.combined_queue_depth_cap)}), shared`;
  const [running, queued] = kind === "image" ? [t.image_concurrent, t.image_queue_depth_cap] : [t.video_concurrent, t.video_queue_depth_cap];
  return running === 0 ? "none" : `${formatCount(running)} (${formatCount(queued)})`;
}
