/** SVG output of the simulated images: the same scene plan drawn as vector shapes, the caption as text. */
import { LINE_HEIGHT } from "./font.ts";
import { gradientLine, ridgeAt } from "./geometry.ts";
import { planImage } from "./plan.ts";
import { captionLayout } from "./raster.ts";
import type { RenderImageOptions, Rgb } from "./types.ts";

/** Pixels per layout cell of the caption: the PNG's raster cell (see `png.ts`), so both place it alike. */
const CAPTION_CELL = 4;
import { checkSize } from "./size.ts";

/** Escapes text for XML content/attributes and drops characters XML 1.0 forbids. */
function xmlText(s: string): string {
  return s
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

/** A coordinate with at most two decimals (never `-0`). */
function num(v: number): string {
  const r = Math.round(v * 100) / 100;
  return Object.is(r, -0) ? "0" : String(r);
}

/** `#rrggbb` of a colour. */
function hex(c: Rgb): string {
  return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Renders the picture of `opts` as a standalone SVG document (UTF-8 text, `image/svg+xml`): an
 * `<svg xmlns=... width height viewBox="0 0 width height">` root with a `<title>` (the prompt, at most
 * 200 characters), a gradient background, the plan's shapes in pixel units and the caption as
 * `<text>` lines on a dark band (laid out as in the PNG). Deterministic; same
 * composition as {@link renderPng}. Throws `RangeError` for sizes that are not integers in 1..4096.
 */
export function renderSvg(opts: RenderImageOptions): string {
  checkSize(opts.width, opts.height);
  const w = opts.width;
  const h = opts.height;
  const unit = Math.min(w, h);
  const plan = planImage(opts);
  const g = gradientLine(w, h, plan.background.angle);
  const title = Array.from(opts.prompt.normalize("NFC")).slice(0, 200).join("");
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">`,
    `<title>${xmlText(title)}</title>`,
    `<defs><linearGradient id="bg" gradientUnits="userSpaceOnUse" x1="${num(g.x1)}" y1="${num(g.y1)}" x2="${num(g.x2)}" y2="${num(g.y2)}">` +
      `<stop offset="0" stop-color="${hex(plan.background.c0)}"/><stop offset="1" stop-color="${hex(plan.background.c1)}"/>` +
      `</linearGradient></defs>`,
    `<rect width="${w}" height="${h}" fill="url(#bg)"/>`,
  ];
  for (const s of plan.shapes) {
    const fill = `fill="${hex(s.color)}" fill-opacity="${num(s.alpha)}"`;
    switch (s.kind) {
      case "circle":
        out.push(`<circle cx="${num(s.cx * w)}" cy="${num(s.cy * h)}" r="${num(s.r * unit)}" ${fill}/>`);
        break;
      case "ring":
        out.push(
          `<circle cx="${num(s.cx * w)}" cy="${num(s.cy * h)}" r="${num(s.r * unit)}" fill="none" ` +
            `stroke="${hex(s.color)}" stroke-opacity="${num(s.alpha)}" stroke-width="${num(s.w * unit)}"/>`,
        );
        break;
      case "rect": {
        const cx = s.cx * w;
        const cy = s.cy * h;
        const hw = s.hw * unit;
        const hh = s.hh * unit;
        const deg = (s.angle * 180) / Math.PI;
        out.push(
          `<rect x="${num(cx - hw)}" y="${num(cy - hh)}" width="${num(2 * hw)}" height="${num(2 * hh)}" ` +
            `transform="rotate(${num(deg)} ${num(cx)} ${num(cy)})" ${fill}/>`,
        );
        break;
      }
      case "band": {
        // A long rectangle through the centre, offset along its normal, rotated by `angle`.
        const len = Math.hypot(w, h) + 2;
        const cx = w / 2 - Math.sin(s.angle) * s.offset * unit;
        const cy = h / 2 + Math.cos(s.angle) * s.offset * unit;
        const half = (s.w * unit) / 2;
        const deg = (s.angle * 180) / Math.PI;
        out.push(
          `<rect x="${num(cx - len / 2)}" y="${num(cy - half)}" width="${num(len)}" height="${num(2 * half)}" ` +
            `transform="rotate(${num(deg)} ${num(cx)} ${num(cy)})" ${fill}/>`,
        );
        break;
      }
      case "ellipse": {
        const deg = (s.angle * 180) / Math.PI;
        out.push(
          `<ellipse cx="${num(s.cx * w)}" cy="${num(s.cy * h)}" rx="${num(s.rx * unit)}" ry="${num(s.ry * unit)}" ` +
            `transform="rotate(${num(deg)} ${num(s.cx * w)} ${num(s.cy * h)})" ${fill}/>`,
        );
        break;
      }
      case "poly": {
        const pts: string[] = [];
        for (let i = 0; i < s.pts.length; i += 2) pts.push(`${num(s.pts[i] * w)},${num(s.pts[i + 1] * h)}`);
        out.push(`<polygon points="${pts.join(" ")}" ${fill}/>`);
        break;
      }
      case "hill": {
        const steps = 96;
        const pts: string[] = [`M0 ${h}`];
        for (let i = 0; i <= steps; i++) {
          const x = i / steps;
          pts.push(`L${num(x * w)} ${num(ridgeAt(s.base, s.waves, x) * h)}`);
        }
        pts.push(`L${w} ${h}Z`);
        out.push(`<path d="${pts.join(" ")}" ${fill}/>`);
        break;
      }
    }
  }
  const layout = captionLayout(plan.caption, Math.ceil(w / CAPTION_CELL), Math.ceil(h / CAPTION_CELL));
  if (layout !== null) {
    const k = layout.scale * CAPTION_CELL;
    const top = layout.top * CAPTION_CELL;
    out.push(`<rect x="0" y="${num(top)}" width="${w}" height="${num(h - top)}" fill="#0c0c10" fill-opacity="0.55"/>`);
    layout.lines.forEach((line, i) => {
      const y = top + 4 * k + i * LINE_HEIGHT * k + 8 * k;
      out.push(
        `<text x="${num(4 * k)}" y="${num(y)}" font-family="monospace" font-size="${num(10 * k)}" fill="#ffffff">${xmlText(line)}</text>`,
      );
    });
  }
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
