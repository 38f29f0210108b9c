/**
 * Random public identifiers: a prefix plus 128 bits of randomness, URL-safe and easy to double-click
 * (letters and digits only). Unguessable (design.md invariant 5).
 */
import { randomFillSync } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/** Random bytes are drawn in blocks: one syscall per block instead of one per id. */
const POOL = Buffer.alloc(4096);
let offset = POOL.length;

function randomByte(): number {
  if (offset >= POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  return POOL[offset++];
}

/**
 * `prefix_` followed by 22 characters from a 62-letter alphabet (at least 128 random bits). Bytes of 248
 * or more are skipped so every letter is equally likely.
 */
export function newId(prefix: string, length = 22): string {
  let out = `${prefix}_`;
  while (out.length < prefix.length + 1 + length) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}
