/**
 * The URL rule of webhook destinations (D31): `https://` and resolving to public addresses only, unless
 * `WEBHOOK_ALLOW_PRIVATE=1` (development and tests), which also allows `http://` and private addresses.
 * Checked when an endpoint is created and when a job is submitted with `webhook_url`; every delivery
 * checks the addresses again when it connects (safe-fetch.ts `safePost`), since DNS may change.
 */
import { errors } from "../errors.ts";
import { classifyAddress, MAX_URL_LENGTH, validateUrlSyntax } from "../upstreams/safe-fetch.ts";
import { isIP } from "node:net";

/** Resolves a host name to its addresses (the system resolver in production; tests inject one). */
export type WebhookHostResolver = (host: string) => Promise<string[]>;

/** How long the check waits for a host to resolve, ms. */
const RESOLVE_TIMEOUT_MS = 2000;

/** What the rule needs: the operator switch and a resolver. */
export interface WebhookUrlPolicy {
  /** `WEBHOOK_ALLOW_PRIVATE=1`. */
  allowPrivate: boolean;
  resolve: WebhookHostResolver;
}

/**
 * Checks `url` against the rule (see the module comment) and returns it.
 * @throws AppError 400 `invalid_webhook_url` naming `param` (not a string or URL, over 2048 characters,
 *   wrong scheme, credentials in it, a host that does not resolve or resolves to any non-public address).
 */
export async function checkWebhookUrl(url: unknown, policy: WebhookUrlPolicy, param: string): Promise<string> {
  const scheme = policy.allowPrivate ? "an http:// or https://" : "an https://";
  if (typeof url !== "string") throw errors.invalidWebhookUrl(`${param} must be ${scheme} URL.`, param);
  if (policy.allowPrivate) {
    // Development: any host, http allowed; only the URL's shape is checked.
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw errors.invalidWebhookUrl(`${param} must be ${scheme} URL.`, param);
    }
    if (url.length > MAX_URL_LENGTH || !["http:", "https:"].includes(u.protocol) || u.hostname === "" || u.username !== "" || u.password !== "") {
      throw errors.invalidWebhookUrl(`${param} must be ${scheme} URL without credentials, at most ${MAX_URL_LENGTH} characters.`, param);
    }
    return url;
  }
  const parsed = validateUrlSyntax(url);
  if (parsed === null) {
    throw errors.invalidWebhookUrl(`${param} must be ${scheme} URL on a public address, without credentials, at most ${MAX_URL_LENGTH} characters.`, param);
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (isIP(host) !== 0) return url; // a literal: validateUrlSyntax has already refused non-public ones
  let addresses: string[];
  try {
    addresses = await Promise.race([
      policy.resolve(host),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), RESOLVE_TIMEOUT_MS).unref()),
    ]);
  } catch {
    throw errors.invalidWebhookUrl(`${param}: the host ${host.slice(0, 100)} could not be resolved.`, param);
  }
  if (addresses.length === 0) throw errors.invalidWebhookUrl(`${param}: the host ${host.slice(0, 100)} has no address.`, param);
  const refused = addresses.find((a) => classifyAddress(a) !== "unicast");
  if (refused !== undefined) throw errors.invalidWebhookUrl(`${param} points at a non-public address (${refused}).`, param);
  return url;
}
