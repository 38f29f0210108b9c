/**
 * The host rules of D25 shared by the job-source adapters: a host means host and port; `trusted_hosts`
 * entries are `host` or `host:port`; an output URL on the host of a source's `base_url` or on one of its
 * trusted hosts is downloaded directly (the runner skips the SSRF-safe fetch for it).
 */

/**
 * A trusted host as `URL.host` writes it (lower case, IPv6 in brackets, no default port).
 * @throws RangeError when `entry` is not `host` or `host:port`.
 */
export function normalizeHost(entry: string): string {
  const trimmed = typeof entry === "string" ? entry.trim() : "";
  let url: URL | null = null;
  try {
    url = new URL(`http://${trimmed}/`);
  } catch {
    url = null;
  }
  if (url === null || trimmed === "" || url.pathname !== "/" || url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "") {
    throw new RangeError(`trusted host ${JSON.stringify(entry)} is not host or host:port`);
  }
  // `new URL("http://h:80/")` drops the default port; keep the port the operator wrote (matching
  // compares it with the URL's effective port).
  const port = /:(\d+)$/.exec(trimmed)?.[1];
  return port !== undefined && url.port === "" ? `${url.hostname}:${Number(port)}` : url.host;
}

/** The port a URL connects to: its explicit port, else 443 for `https:` and 80 for `http:`. */
export function effectivePort(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" ? 443 : 80;
}

/**
 * A predicate telling whether a URL is on one of `entries` (`trusted_hosts`): its host as written, or its
 * host name with its effective port (`proxy.internal:80` matches `http://proxy.internal/`).
 * @throws RangeError for an entry that is not `host` or `host:port` (see {@link normalizeHost}).
 */
export function trustedHostMatcher(entries: readonly string[] = []): (url: URL) => boolean {
  const hosts = new Set(entries.map(normalizeHost));
  return (url) => hosts.has(url.host) || hosts.has(`${url.hostname}:${effectivePort(url)}`);
}

/**
 * True when `raw` is an `http(s)` URL on the host (host and port) of `base` or on a trusted host: such an
 * output file is downloaded as it is (D25). False for anything else, an unparsable URL included.
 */
export function isOwnOrTrustedHost(raw: string, base: URL, isTrusted: (url: URL) => boolean): boolean {
  try {
    const url = new URL(raw);
    if (url.protocol !== "https:" && url.protocol !== "http:") return false;
    return url.host === base.host || isTrusted(url);
  } catch {
    return false;
  }
}
