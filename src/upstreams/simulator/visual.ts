/**
 * The simulator's image and video generation (D10): real PNG images at the requested size, derived
 * from the prompt; SVG documents for vector models; playable MP4 clips of the requested duration (small
 * pre-encoded H.264 clips, one per whole duration, committed beside this file).
 *
 * Latency follows the spec's typical ranges (images ~8 s, video ~60 s) times `latencyScale`; progress is
 * reported every half second while "working" (the runner's heartbeat). `X-Svc-Simulate`: `fail` throws,
 * `slow` adds at least 1 s, `hang` never answers and never reports progress (the sweep refunds the job).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { deflateSync } from "node:zlib";
import { type ImageRequest, type MediaOutput, UpstreamError, type VideoRequest, type VisualAdapter } from "../types.ts";

/** Typical latencies in seconds, before `latencyScale`. */
export const SIM_VISUAL_TIMING = { imageSec: 8, videoSec: 60, progressEveryMs: 500 } as const;

/** Durations with a committed clip; other durations use the nearest longer one's... exact set covers 1-10 and 15. */
const CLIP_SECONDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15];
const clipCache = new Map<number, Uint8Array>();

/** The committed MP4 clip of `seconds` (whole seconds, 1-15). */
export function videoClip(seconds: number): Uint8Array {
  const d = CLIP_SECONDS.find((s) => s >= seconds) ?? 15;
  let clip = clipCache.get(d);
  if (!clip) {
    clip = new Uint8Array(readFileSync(new URL(`./video-clips/clip-${d}.mp4`, import.meta.url)));
    clipCache.set(d, clip);
  }
  return clip;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, "ascii");
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** Seeded numbers in [0, 1) from a prompt (sha256 of the inputs). */
function palette(prompt: string, index: number): number[] {
  const h = createHash("sha256").update(`${prompt}\u0000${index}`).digest();
  return [...h].map((b) => b / 256);
}

/**
 * A real RGB PNG of exactly `width` x `height` pixels, derived from the prompt: two blended gradients and
 * soft circles whose colours and positions come from a hash of the prompt and the image index.
 */
export function renderPng(opts: { prompt: string; width: number; height: number; index: number }): Uint8Array {
  const { width, height } = opts;
  const r = palette(opts.prompt, opts.index);
  const c1 = [r[0] * 255, r[1] * 255, r[2] * 255];
  const c2 = [r[3] * 255, r[4] * 255, r[5] * 255];
  const circles = Array.from({ length: 4 }, (_, i) => ({
    x: r[6 + i * 4] * width,
    y: r[7 + i * 4] * height,
    rad: (0.1 + r[8 + i * 4] * 0.3) * Math.min(width, height),
    col: [r[9 + i * 4] * 255, r[(10 + i * 4) % 32] * 255, r[(11 + i * 4) % 32] * 255],
  }));
  const rowLen = width * 3 + 1;
  const raw = Buffer.alloc(rowLen * height);
  for (let y = 0; y < height; y++) {
    const o = y * rowLen;
    raw[o] = 0;
    const ty = y / height;
    for (let x = 0; x < width; x++) {
      const t = (x / width + ty) / 2;
      let R = c1[0] + (c2[0] - c1[0]) * t;
      let G = c1[1] + (c2[1] - c1[1]) * t;
      let B = c1[2] + (c2[2] - c1[2]) * t;
      for (const c of circles) {
        const dx = x - c.x;
        const dy = y - c.y;
        const d2 = (dx * dx + dy * dy) / (c.rad * c.rad);
        if (d2 < 1) {
          const a = (1 - d2) * 0.7;
          R += (c.col[0] - R) * a;
          G += (c.col[1] - G) * a;
          B += (c.col[2] - B) * a;
        }
      }
      const p = o + 1 + x * 3;
      raw[p] = R;
      raw[p + 1] = G;
      raw[p + 2] = B;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return new Uint8Array(
    Buffer.concat([signature, chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw, { level: 3 })), chunk("IEND", new Uint8Array(0))]),
  );
}

const XML_ESC: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

/** A standalone SVG document of shapes derived from the prompt (vector models). */
export function renderSvg(opts: { prompt: string; width: number; height: number; index: number }): string {
  const { width, height } = opts;
  const r = palette(opts.prompt, opts.index);
  const col = (i: number) => `rgb(${Math.round(r[i % 32] * 255)},${Math.round(r[(i + 1) % 32] * 255)},${Math.round(r[(i + 2) % 32] * 255)})`;
  const shapes: string[] = [];
  for (let i = 0; i < 6; i++) {
    const x = Math.round(r[(i * 5) % 32] * width);
    const y = Math.round(r[(i * 5 + 1) % 32] * height);
    const s = Math.round((0.08 + r[(i * 5 + 2) % 32] * 0.25) * Math.min(width, height));
    shapes.push(
      i % 2 === 0
        ? `<circle cx="${x}" cy="${y}" r="${s}" fill="${col(i * 3)}" fill-opacity="0.8"/>`
        : `<rect x="${x - s}" y="${y - s}" width="${2 * s}" height="${2 * s}" rx="${Math.round(s / 4)}" fill="${col(i * 3 + 1)}" fill-opacity="0.8"/>`,
    );
  }
  const title = opts.prompt.slice(0, 120).replace(/[&<>"]/g, (c) => XML_ESC[c] ?? c);
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
<title>${title}</title>
<rect width="100%" height="100%" fill="${col(20)}"/>
${shapes.join("\n")}
</svg>
`;
}

/** Simulated image and video upstream. */
export class SimulatedVisualUpstream implements VisualAdapter {
  readonly #latencyScale: number;

  constructor(latencyScale: number) {
    this.#latencyScale = latencyScale;
  }

  /** Waits the simulated latency, reporting progress; applies `simulate`. */
  async #work(typicalSec: number, simulate: ImageRequest["simulate"], signal?: AbortSignal, onProgress?: () => void): Promise<void> {
    if (simulate === "hang") {
      // A worker that stops reporting: never answers, never reports; only an abort ends it.
      await new Promise<void>((_, reject) => {
        if (signal?.aborted) reject(signal.reason);
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
      return;
    }
    let ms = typicalSec * this.#latencyScale * 1000;
    if (simulate === "fail") ms = Math.min(ms, 300 * this.#latencyScale);
    if (simulate === "slow") ms += 1000 + 2000 * this.#latencyScale;
    const end = Date.now() + ms;
    onProgress?.();
    while (Date.now() < end) {
      await sleep(Math.min(SIM_VISUAL_TIMING.progressEveryMs, end - Date.now()), undefined, { signal });
      onProgress?.();
    }
    signal?.throwIfAborted();
    if (simulate === "fail") throw new UpstreamError("simulated upstream failure (X-Svc-Simulate: fail)", false);
  }

  async generateImages(req: ImageRequest, signal?: AbortSignal, onProgress?: () => void): Promise<MediaOutput[]> {
    await this.#work(SIM_VISUAL_TIMING.imageSec, req.simulate, signal, onProgress);
    const outputs: MediaOutput[] = [];
    for (let i = 0; i < req.n; i++) {
      const opts = { prompt: req.prompt, width: req.width, height: req.height, index: i };
      if (req.output === "svg") {
        outputs.push({ kind: "bytes", contentType: "image/svg+xml", body: new TextEncoder().encode(renderSvg(opts)) });
      } else {
        outputs.push({ kind: "bytes", contentType: "image/png", body: renderPng(opts), width: req.width, height: req.height });
      }
      onProgress?.();
      // Yield between images so a big batch does not hold the event loop.
      await sleep(0);
    }
    return outputs;
  }

  async generateVideo(req: VideoRequest, signal?: AbortSignal, onProgress?: () => void): Promise<MediaOutput> {
    await this.#work(SIM_VISUAL_TIMING.videoSec, req.simulate, signal, onProgress);
    return { kind: "bytes", contentType: "video/mp4", body: videoClip(req.durationSec), durationSec: req.durationSec };
  }

  async close(): Promise<void> {}
}

/** The simulated image/video upstream (`latencyScale`: `SIM_LATENCY_SCALE`). */
export function createSimulatedVisualUpstream(opts: { latencyScale: number }): SimulatedVisualUpstream {
  return new SimulatedVisualUpstream(opts.latencyScale);
}
