/**
 * Random public identifiers: a prefix plus 128 bits of randomness, URL-safe and easy to double-click
 * (letters and digits only). Unguessable (docs/architecture.md invariant 5).
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

const TIME_CHARS = 8;

/**
 * `prefix_` followed by the current time in ms (8 characters of the same alphabet, in sort order) and
 * then 22 random characters as {@link newId} (at least 128 random bits, so still unguessable). Ids made
 * later sort after ids made earlier (to the ms), so the database appends them to the last page of its
 * index instead of a random one: rows written together share pages and commits write fewer pages.
 * Used for the rows every paid call writes (requests, holds, ledger entries, jobs).
 */
export function newTimeOrderedId(prefix: string, now = Date.now()): string {
  let t = Math.max(0, Math.floor(now));
  let time = "";
  for (let i = 0; i < TIME_CHARS; i++) {
    time = SORTED[t % 62] + time;
    t = Math.floor(t / 62);
  }
  return `${prefix}_${time}${newId("", 22).slice(1)}`;
}

/** The alphabet in byte order (digits, upper case, lower case), so ids compare as their times. */
const SORTED = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
