/**
 * The look of the API reference at `GET /docs` (Swagger UI, @fastify/swagger-ui's `logo` and `theme`
 * options): the project's name in the page title and the top bar instead of the plugin's default (Fastify's
 * logo), the console's colours, a favicon of the console's mark, the logo linking back to the console, and
 * no "Explore" box (the page documents this gateway, not any URL typed in). Issue 42.
 *
 * Everything is served by the gateway itself under `/docs/static/` or inlined as a `data:` image, so the
 * page's content security policy (openapi.ts: `script-src 'self'`, `img-src 'self' data:`) holds.
 */

/** The project's name, as the console's brand shows it. */
const BRAND = "Media Gateway";
/** The console's colours (console/src/styles.css: the sidebar, Pico's primary and text colours). */
const PRIMARY = "#0172ad";
const TEXT = "#373c44";
const MUTED = "#646b79";
const BAR = "#f6f7f9";
const BORDER = "#e7eaf0";
const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Ubuntu, Cantarell, 'Noto Sans', sans-serif";

/** The top bar's logo: the console's mark and name, and what the page is. 40 px high, drawn as text. */
const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="330" height="40" viewBox="0 0 330 40">
<text x="0" y="27" font-family="${FONT}" font-size="20" font-weight="700"><tspan fill="${PRIMARY}">&#9670;</tspan><tspan fill="${TEXT}" dx="8">${BRAND}</tspan><tspan fill="${MUTED}" dx="10" font-size="17" font-weight="400">API reference</tspan></text>
</svg>`;

/** The favicon: the console's mark, a diamond in the primary colour. */
const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path d="M16 2 30 16 16 30 2 16z" fill="${PRIMARY}"/></svg>`;

/** Swagger UI's top bar in the console's colours; the URL box and its "Explore" button hidden. */
const CSS = `.swagger-ui .topbar { background: ${BAR}; border-bottom: 1px solid ${BORDER}; padding: 6px 0; }
.swagger-ui .topbar .download-url-wrapper { display: none; }
.swagger-ui .topbar a { max-width: none; min-width: 0; flex: 0 1 auto; }
.swagger-ui .topbar a img { max-width: 100%; height: auto; max-height: 40px; }
.swagger-ui .topbar .topbar-wrapper { flex-direction: row; flex-wrap: nowrap; align-items: center; justify-content: space-between; }
.swagger-ui .topbar .dark-mode-toggle button svg { fill: ${TEXT}; }
.swagger-ui .topbar .console-link { font-family: ${FONT}; font-size: 15px; color: ${PRIMARY}; white-space: nowrap; margin: 0 12px 0 auto; }
`;

/**
 * The top bar's logo links to the console (the plugin's link points at the page itself), and a
 * "Back to the console" link sits at its right. Swagger UI renders the bar after this script runs: wait for it.
 */
const JS = `(function () {
  function brand(wrapper) {
    var logo = wrapper.querySelector("a.link");
    if (logo) {
      logo.href = "/console/";
      logo.setAttribute("aria-label", ${JSON.stringify(`${BRAND}: back to the console`)});
      var img = logo.querySelector("img");
      if (img) img.alt = ${JSON.stringify(`${BRAND} API reference`)};
    }
    if (!wrapper.querySelector(".console-link")) {
      var back = document.createElement("a");
      back.className = "console-link";
      back.href = "/console/";
      back.textContent = "Console";
      wrapper.insertBefore(back, wrapper.querySelector(".dark-mode-toggle"));
    }
  }
  function find() {
    var wrapper = document.querySelector("#swagger-ui .topbar .topbar-wrapper");
    if (wrapper && wrapper.querySelector("a.link img")) { brand(wrapper); return true; }
    return false;
  }
  if (find()) return;
  var observer = new MutationObserver(function () { if (find()) observer.disconnect(); });
  observer.observe(document.documentElement, { childList: true, subtree: true });
})();
`;

/** The page's `<title>`. */
export const DOCS_TITLE = `API reference · ${BRAND}`;

/** @fastify/swagger-ui's `logo` option: the SVG above, inlined by the plugin as a `data:` image. */
export const DOCS_LOGO = { type: "image/svg+xml", content: Buffer.from(LOGO_SVG) };

/** @fastify/swagger-ui's `theme` option: title, favicon, the bar's styles and the console link (files under `/docs/static/theme/`). */
export const DOCS_THEME = {
  title: DOCS_TITLE,
  favicon: [{ filename: "favicon.svg", rel: "icon", sizes: "any", type: "image/svg+xml", content: Buffer.from(FAVICON_SVG) }],
  css: [{ filename: "media-gateway.css", content: CSS }],
  js: [{ filename: "media-gateway.js", content: JS }],
};
