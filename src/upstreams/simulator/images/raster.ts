/**
 * Rasterization of an image plan: an anti-aliased RGB canvas laid out as PNG scanlines, with the
 * plan's caption (the prompt) written in a dark band at the bottom.
 */
import { ADVANCE, GLYPH_H, GLYPH_W, glyph, LINE_HEIGHT, wrapCaption } from "./font.ts";
import { gradientLine, ridgeAt } from "./geometry.ts";
import type { Gradient, ImagePlan, Rgb } from "./types.ts";

/**
 * An RGB canvas whose memory is the PNG scanline buffer itself: each row is one filter-type byte
 * followed by `width x 3` bytes.
 */
export class Canvas {
  readonly w: number;
  readonly h: number;
  readonly stride: number;
  readonly data: Uint8ClampedArray;

  constructor(w: number, h: number) {
    this.w = w;
    this.h = h;
    this.stride = w * 3 + 1;
    this.data = new Uint8ClampedArray(this.stride * h);
  }

  gradient(g: Gradient): void {
    const { w, h, data, stride } = this;
    const { x1, y1, x2, y2 } = gradientLine(w, h, g.angle);
    const dx = x2 - x1;
    const dy = y2 - y1;
    const len2 = dx * dx + dy * dy || 1;
    const [r0, g0, b0] = g.c0;
    const dr = g.c1[0] - r0;
    const dg = g.c1[1] - g0;
    const db = g.c1[2] - b0;
    const stepX = dx / len2;
    for (let y = 0; y < h; y++) {
      let t = ((0.5 - x1) * dx + (y + 0.5 - y1) * dy) / len2;
      let o = y * stride + 1;
      for (let x = 0; x < w; x++, o += 3, t += stepX) {
        const tt = t < 0 ? 0 : t > 1 ? 1 : t;
        data[o] = r0 + dr * tt;
        data[o + 1] = g0 + dg * tt;
        data[o + 2] = b0 + db * tt;
      }
    }
  }

  /** Blends `color` at pixel (x, y) with coverage `a` (0..1). */
  private blend(x: number, y: number, color: Rgb, a: number): void {
    const o = y * this.stride + 1 + x * 3;
    const d = this.data;
    d[o] += (color[0] - d[o]) * a;
    d[o + 1] += (color[1] - d[o + 1]) * a;
    d[o + 2] += (color[2] - d[o + 2]) * a;
  }

  /**
   * Fills the pixels inside the box (px) for which `dist(px, py)` (a signed distance in px, negative
   * inside) is below 0.5, with a one-pixel anti-aliased edge.
   */
  private fillSdf(
    x0: number,
    y0: number,
    x1: number,
    y1: number,
    color: Rgb,
    alpha: number,
    dist: (px: number, py: number) => number,
  ): void {
    const xa = Math.max(0, Math.floor(x0));
    const xb = Math.min(this.w - 1, Math.ceil(x1));
    const ya = Math.max(0, Math.floor(y0));
    const yb = Math.min(this.h - 1, Math.ceil(y1));
    for (let y = ya; y <= yb; y++) {
      const py = y + 0.5;
      for (let x = xa; x <= xb; x++) {
        const d = dist(x + 0.5, py);
        if (d >= 0.5) continue;
        const cov = d <= -0.5 ? 1 : 0.5 - d;
        this.blend(x, y, color, cov * alpha);
      }
    }
  }

  circle(cx: number, cy: number, r: number, color: Rgb, alpha: number): void {
    this.fillSdf(cx - r - 1, cy - r - 1, cx + r + 1, cy + r + 1, color, alpha, (px, py) => {
      const dx = px - cx;
      const dy = py - cy;
      return Math.sqrt(dx * dx + dy * dy) - r;
    });
  }

  ring(cx: number, cy: number, r: number, width: number, color: Rgb, alpha: number): void {
    const outer = r + width / 2 + 1;
    const half = width / 2;
    this.fillSdf(cx - outer, cy - outer, cx + outer, cy + outer, color, alpha, (px, py) => {
      const dx = px - cx;
      const dy = py - cy;
      return Math.abs(Math.sqrt(dx * dx + dy * dy) - r) - half;
    });
  }

  rect(cx: number, cy: number, hw: number, hh: number, angle: number, color: Rgb, alpha: number): void {
    const c = Math.cos(angle);
    const s = Math.sin(angle);
    const ex = Math.abs(hw * c) + Math.abs(hh * s) + 1;
    const ey = Math.abs(hw * s) + Math.abs(hh * c) + 1;
    this.fillSdf(cx - ex, cy - ey, cx + ex, cy + ey, color, alpha, (px, py) => {
      const dx = px - cx;
      const dy = py - cy;
      const u = Math.abs(dx * c + dy * s) - hw;
      const v = Math.abs(-dx * s + dy * c) - hh;
      return Math.max(u, v);
    });
  }

  /** An ellipse with radii `rx`, `ry` (px) rotated by `angle` radians. */
  ellipse(cx: number, cy: number, rx: number, ry: number, angle: number, color: Rgb, alpha: number): void {
    if (rx <= 0 || ry <= 0) return;
    const c = Math.cos(angle);
    const s = Math.sin(angle);
    const ex = Math.sqrt(rx * rx * c * c + ry * ry * s * s) + 1;
    const ey = Math.sqrt(rx * rx * s * s + ry * ry * c * c) + 1;
    const k = Math.min(rx, ry);
    this.fillSdf(cx - ex, cy - ey, cx + ex, cy + ey, color, alpha, (px, py) => {
      const dx = px - cx;
      const dy = py - cy;
      const u = (dx * c + dy * s) / rx;
      const v = (-dx * s + dy * c) / ry;
      return (Math.sqrt(u * u + v * v) - 1) * k;
    });
  }

  /** A polygon (vertices `pts` as x, y pairs in px), filled by the even-odd rule at pixel centres. */
  poly(pts: readonly number[], color: Rgb, alpha: number): void {
    const n = pts.length / 2;
    if (n < 3) return;
    let x0 = Number.POSITIVE_INFINITY;
    let y0 = Number.POSITIVE_INFINITY;
    let x1 = Number.NEGATIVE_INFINITY;
    let y1 = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < n; i++) {
      x0 = Math.min(x0, pts[2 * i]);
      x1 = Math.max(x1, pts[2 * i]);
      y0 = Math.min(y0, pts[2 * i + 1]);
      y1 = Math.max(y1, pts[2 * i + 1]);
    }
    const ya = Math.max(0, Math.floor(y0));
    const yb = Math.min(this.h - 1, Math.ceil(y1));
    const xs: number[] = [];
    for (let y = ya; y <= yb; y++) {
      const py = y + 0.5;
      xs.length = 0;
      for (let i = 0, j = n - 1; i < n; j = i++) {
        const yi = pts[2 * i + 1];
        const yj = pts[2 * j + 1];
        if (yi > py !== yj > py) xs.push(pts[2 * i] + ((py - yi) * (pts[2 * j] - pts[2 * i])) / (yj - yi));
      }
      xs.sort((a, b) => a - b);
      for (let k = 0; k + 1 < xs.length; k += 2) {
        const xa = Math.max(0, Math.ceil(xs[k] - 0.5));
        const xb = Math.min(this.w - 1, Math.floor(xs[k + 1] - 0.5));
        for (let x = xa; x <= xb; x++) this.blend(x, y, color, alpha);
      }
    }
  }

  /** Fills the rectangle of pixels x0..x1-1, y0..y1-1 with `color` at `alpha`. */
  fillBox(x0: number, y0: number, x1: number, y1: number, color: Rgb, alpha: number): void {
    for (let y = Math.max(0, y0); y < Math.min(this.h, y1); y++) {
      for (let x = Math.max(0, x0); x < Math.min(this.w, x1); x++) this.blend(x, y, color, alpha);
    }
  }

  /** A straight band through the centre offset by `offset` px along its normal, `width` px wide. */
  band(offset: number, width: number, angle: number, color: Rgb, alpha: number): void {
    const nx = -Math.sin(angle);
    const ny = Math.cos(angle);
    const cx = this.w / 2;
    const cy = this.h / 2;
    const half = width / 2;
    this.fillSdf(0, 0, this.w - 1, this.h - 1, color, alpha, (px, py) => {
      return Math.abs((px - cx) * nx + (py - cy) * ny - offset) - half;
    });
  }

  /** Fills below a ridge given as a y value (px) per column. */
  below(ridge: Float64Array, color: Rgb, alpha: number): void {
    for (let x = 0; x < this.w; x++) {
      const top = ridge[x];
      const y0 = Math.max(0, Math.floor(top));
      for (let y = y0; y < this.h; y++) {
        const cov = Math.min(1, y + 1 - top);
        if (cov <= 0) continue;
        this.blend(x, y, color, cov * alpha);
      }
    }
  }
}

/** Draws `plan` onto a new canvas of `w` x `h` px. */
export function rasterize(plan: ImagePlan, w: number, h: number): Canvas {
  const cv = new Canvas(w, h);
  cv.gradient(plan.background);
  const unit = Math.min(w, h);
  for (const s of plan.shapes) {
    switch (s.kind) {
      case "circle":
        cv.circle(s.cx * w, s.cy * h, s.r * unit, s.color, s.alpha);
        break;
      case "ring":
        cv.ring(s.cx * w, s.cy * h, s.r * unit, s.w * unit, s.color, s.alpha);
        break;
      case "rect":
        cv.rect(s.cx * w, s.cy * h, s.hw * unit, s.hh * unit, s.angle, s.color, s.alpha);
        break;
      case "band":
        cv.band(s.offset * unit, s.w * unit, s.angle, s.color, s.alpha);
        break;
      case "ellipse":
        cv.ellipse(s.cx * w, s.cy * h, s.rx * unit, s.ry * unit, s.angle, s.color, s.alpha);
        break;
      case "poly": {
        const pts = s.pts.map((v, i) => (i % 2 === 0 ? v * w : v * h));
        cv.poly(pts, s.color, s.alpha);
        break;
      }
      case "hill": {
        const ridge = new Float64Array(w);
        for (let x = 0; x < w; x++) ridge[x] = ridgeAt(s.base, s.waves, (x + 0.5) / w) * h;
        cv.below(ridge, s.color, s.alpha);
        break;
      }
    }
  }
  drawCaption(cv, plan.caption);
  return cv;
}

/** Layout of a caption on a `w` x `h` px canvas: font scale (px per font pixel), lines, band top (px). */
export function captionLayout(text: string, w: number, h: number): { scale: number; lines: string[]; top: number } | null {
  const scale = Math.max(1, Math.round(Math.min(w, h) / 300));
  const margin = 4 * scale;
  const maxChars = Math.floor((w - 2 * margin) / (ADVANCE * scale));
  if (h < 40 || maxChars < 12) return null;
  const lines = wrapCaption(text, maxChars, w < h ? 3 : 2);
  if (lines.length === 0) return null;
  const top = h - lines.length * LINE_HEIGHT * scale - 2 * margin;
  return { scale, lines, top };
}

/**
 * Writes `text` (word-wrapped, at most two lines, three on portrait canvases; cut with `...`) in white
 * on a translucent dark band along the bottom of `cv`, in the 5x7 font scaled to about 1/40 of the
 * shorter side. Canvases too small for a dozen characters a line get no caption.
 */
export function drawCaption(cv: Canvas, text: string): void {
  const layout = captionLayout(text, cv.w, cv.h);
  if (layout === null) return;
  const { scale, lines, top } = layout;
  const margin = 4 * scale;
  cv.fillBox(0, top, cv.w, cv.h, [12, 12, 16], 0.55);
  const white: Rgb = [255, 255, 255];
  lines.forEach((line, li) => {
    const y0 = top + margin + li * LINE_HEIGHT * scale + scale;
    for (let ci = 0; ci < line.length; ci++) {
      const rows = glyph(line[ci]);
      const x0 = margin + ci * ADVANCE * scale;
      for (let r = 0; r < GLYPH_H; r++) {
        const bits = rows[r];
        if (bits === 0) continue;
        for (let col = 0; col < GLYPH_W; col++) {
          if ((bits >> (GLYPH_W - 1 - col)) & 1) cv.fillBox(x0 + col * scale, y0 + r * scale, x0 + (col + 1) * scale, y0 + (r + 1) * scale, white, 1);
        }
      }
    }
  });
}
