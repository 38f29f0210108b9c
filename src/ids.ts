/**
 * Random public identifiers: a prefix plus 128 bits of randomness in base62-ish base64url without
 * `-`/`_` (easy to double-click and paste). Unguessable (design.md invariant 5).
 */
import { randomBytes } from "node:crypto";

/** `prefix_` followed by about 22 URL-safe characters (at least 128 random bits). */
export function newId(prefix: string, bytes = 16): string {
  const raw = randomBytes(bytes + 4)
    .toString("base64url")
    .replace(/[-_]/g, "");
  return `${prefix}_${raw.slice(0, Math.ceil((bytes * 4) / 3))}`;
}
