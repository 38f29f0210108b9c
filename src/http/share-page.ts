/**
 * HTML rendering of public share pages. The data lookup is `sharedOutput` in jobs/outputs.ts; rendering
 * stays on the HTTP side, since services do not know about presentation.
 */
import type { GalleryItem } from "../jobs/outputs.ts";

/** HTML escapes of the five characters that matter in text and quoted attributes. */
const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/**
 * The share page of a job's output (`GET /share/{job_id}`, D19): a small HTML document with a player
 * (audio/video) or the image(s). Every value from the item is HTML-escaped.
 */
export function sharePage(item: GalleryItem): string {
  let media: string;
  if (item.content_type.startsWith("audio/")) {
    media = `<audio controls preload="metadata" src="${esc(item.url)}"></audio>`;
  } else if (item.content_type.startsWith("video/")) {
    media = `<video controls preload="metadata" src="${esc(item.url)}"></video>`;
  } else {
    media = item.urls.map((u) => `<img alt="generated image" src="${esc(u)}">`).join("\n");
  }
  const duration = item.duration_sec === null ? "" : ` &middot; ${item.duration_sec.toFixed(1)} s`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(item.model)} &middot; ${esc(item.job_id)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:48rem;margin:3rem auto;padding:0 1rem;color:#222}
audio,video,img{width:100%;margin:1rem 0}p{color:#666}</style>
</head>
<body>
<h1>${esc(item.kind)} by ${esc(item.model)}</h1>
${media}
<p>${esc(item.created_at)}${duration} &middot; <a href="${esc(item.url)}" download>download</a></p>
</body>
</html>
`;
}
