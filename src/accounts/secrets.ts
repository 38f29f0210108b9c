/**
 * Secrets: password hashing (scrypt, node:crypto) and API key / session token generation and hashing.
 * Only hashes are stored (D8); comparisons run in constant time (as hono's bearer-auth).
 */
import { createHash, randomBytes, scrypt, timingSafeEqual } from "node:crypto";

const SCRYPT_N = 16384;
const SCRYPT_R = 8;
const SCRYPT_P = 1;
const KEY_LEN = 32;

function scryptAsync(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_LEN, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** Hashes a password as `scrypt$N$r$p$<salt b64>$<hash b64>`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P);
  return `scrypt$${SCRYPT_N}$${SCRYPT_R}$${SCRYPT_P}$${salt.toString("base64")}$${hash.toString("base64")}`;
}

/** A well-formed hash of a random password, checked when the email is unknown so timing reveals nothing. */
let dummyHash: Promise<string> | null = null;

/**
 * Checks `password` against a stored hash in constant time. With `stored` null (unknown user) it still
 * does the same work and returns false.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  if (stored === null) {
    dummyHash ??= hashPassword(randomBytes(16).toString("hex"));
    await verifyPassword(password, await dummyHash);
    return false;
  }
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [, n, r, p, saltB64, hashB64] = parts;
  const expected = Buffer.from(hashB64, "base64");
  const actual = await scryptAsync(password, Buffer.from(saltB64, "base64"), Number(n), Number(r), Number(p));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/**
 * A new API key secret: `gw_` + 43 URL-safe characters (256 random bits); a test-mode key (D32) is
 * `gw_test_` + the same.
 */
export function newApiKeySecret(mode: "live" | "test" = "live"): string {
  return `${mode === "test" ? "gw_test_" : "gw_"}${randomBytes(32).toString("base64url")}`;
}

/** A new session token: `sess_` + 43 URL-safe characters. */
export function newSessionToken(): string {
  return `sess_${randomBytes(32).toString("base64url")}`;
}

/** SHA-256 hex of a high-entropy secret (keys and tokens; a slow hash adds nothing at 256 bits). */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** Constant-time comparison of two hex digests of equal length. */
export function digestsEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a, "hex");
  const bb = Buffer.from(b, "hex");
  return ba.length === bb.length && ba.length > 0 && timingSafeEqual(ba, bb);
}
