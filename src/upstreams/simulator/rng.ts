/**
 * Deterministic randomness of the simulator (decision D10): seeds derived from strings and a seeded
 * PRNG, so that the same inputs always give the same samples, images and bytes. Never `Math.random`.
 */
import { createHash } from "node:crypto";

/** A seeded pseudo-random generator: each call returns a float in [0, 1). */
export type Rng = () => number;

/**
 * 16 seed bytes (the first half of a SHA-256) derived from any list of strings. Parts are joined
 * with a separator that cannot appear by accident, so `["ab", "c"]` and `["a", "bc"]` differ.
 */
export function seedFrom(...parts: string[]): Uint8Array {
  const h = createHash("sha256");
  for (const p of parts) h.update(`${p.length}:${p}\u0000`);
  return new Uint8Array(h.digest().buffer, 0, 16);
}

/**
 * A fast deterministic PRNG (sfc32) seeded with at least 16 bytes (for example from {@link seedFrom})
 * or with a string (hashed with {@link seedFrom}). Never uses `Math.random`.
 */
export function createRng(seed: Uint8Array | string): Rng {
  const bytes = typeof seed === "string" ? seedFrom(seed) : seed;
  if (bytes.length < 16) throw new RangeError("createRng needs at least 16 seed bytes");
  const dv = new DataView(bytes.buffer, bytes.byteOffset, 16);
  let a = dv.getUint32(0, true);
  let b = dv.getUint32(4, true);
  let c = dv.getUint32(8, true);
  let d = dv.getUint32(12, true) | 1;
  const next: Rng = () => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  // Warm up so that similar seeds diverge.
  for (let i = 0; i < 12; i++) next();
  return next;
}
