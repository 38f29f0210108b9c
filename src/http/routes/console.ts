/**
 * The web console (issue 15): the static bundle `console/dist` (built by `npm run build:console`, and by
 * `npm ci` through `prepare`) served at `/console/`, same origin as the API it calls.
 *
 * - `/console` redirects to `/console/` (the bundle's relative base); the query string is kept.
 * - `/console/assets/*` are Vite's content-hashed files: cached for a year, `immutable`.
 * - Any other path is a file of the bundle when there is one, else `index.html` (the single-page app routes
 *   it in the browser); `index.html` is `no-cache`, so a new deploy shows at the next load.
 * - Without a build: 503 with an HTML page saying how to build it, never a 500.
 *
 * Not in the OpenAPI document (`hide`): these are pages, not API operations.
 */
import { existsSync, statSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyReply } from "fastify";
import { errors } from "../../errors.ts";
import type { App } from "../types.ts";

/** Where the build writes the bundle: `<repository>/console/dist`. */
export const CONSOLE_DIST = resolve(import.meta.dirname, "../../../console/dist");

/**
 * The page's policy: everything from this origin, inline styles (React and Chart.js set `style`), images
 * from data: URLs (Pico's icons) and blob:/data: media; no framing.
 */
const CSP = [
  "default-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob: data:",
  "style-src 'self' 'unsafe-inline'",
  "object-src 'none'",
  "base-uri 'self'",
  "frame-ancestors 'none'",
].join("; ");

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Console not built</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem">
<h1>The console is not built</h1>
<p>This gateway has no console bundle (<code>console/dist</code> is missing).
Run <code>npm run build:console</code> in the gateway's folder, then reload this page.</p>
<p>The API works without it: see <a href="/docs">/docs</a>.</p>
</body></html>
`;

/** Registers the console routes; `distDir` (default {@link CONSOLE_DIST}) is read at each request, so a build made after start is served. */
export async function consoleRoutes(app: App, opts: { distDir?: string } = {}): Promise<void> {
  const dist = resolve(opts.distDir ?? CONSOLE_DIST);
  // `serve: false`: only `reply.sendFile` (path confinement, ETag, Range, conditional GETs); routes are ours.
  await app.register(fastifyStatic, { root: dist, serve: false });

  const pageHeaders = (reply: FastifyReply) =>
    reply.header("content-security-policy", CSP).header("x-content-type-options", "nosniff").header("referrer-policy", "same-origin");

  const sendIndex = (reply: FastifyReply) => {
    if (!existsSync(join(dist, "index.html"))) {
      return reply.code(503).header("cache-control", "no-store").type("text/html; charset=utf-8").send(NOT_BUILT);
    }
    return pageHeaders(reply).header("cache-control", "no-cache").sendFile("index.html", { cacheControl: false });
  };

  app.get("/console", { schema: { hide: true } }, async (req, reply) => {
    const q = req.url.indexOf("?");
    return reply.redirect(`/console/${q >= 0 ? req.url.slice(q) : ""}`, 301);
  });

  app.get<{ Params: { "*"?: string } }>("/console/*", { schema: { hide: true } }, async (req, reply) => {
    // The router has already percent-decoded the wildcard.
    const rel = req.params["*"] ?? "";
    if (rel.startsWith("assets/")) {
      // A missing hashed asset is a 404: answering index.html would hand a script tag HTML.
      if (!isFile(dist, rel)) throw errors.notFound(`No console asset ${rel}.`);
      return pageHeaders(reply).sendFile(rel, { maxAge: "365d", immutable: true });
    }
    if (rel !== "" && rel !== "index.html" && isFile(dist, rel)) return pageHeaders(reply).sendFile(rel, { maxAge: "1h" });
    return sendIndex(reply);
  });
}

/** True when `rel` names a regular file inside `root` (never outside it: `..` segments are refused). */
function isFile(root: string, rel: string): boolean {
  const file = resolve(root, rel);
  if (!file.startsWith(root + sep)) return false;
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
