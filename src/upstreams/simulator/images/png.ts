/** PNG encoding of the simulated images (8-bit RGB, deflate on the calling thread or the libuv pool). */
import { promisify } from "node:util";
import { crc32, deflate, deflateSync } from "node:zlib";
import { planImage } from "./plan.ts";
import { rasterize } from "./raster.ts";
import { checkSize } from "./size.ts";
import type { RenderImageOptions } from "./types.ts";

const deflateAsync = promisify(deflate);

/** The eight bytes every PNG file starts with. */
const PNG_SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

/** zlib level of the IDAT stream: fast, still small for these smooth pictures. */
const PNG_ZLIB_LEVEL = 3;

/** One PNG chunk: length, type, data, CRC-32 of type + data. */
function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  dv.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/**
 * Pixels per raster cell: the picture is drawn on a grid 4x coarser than the output and enlarged, so a
 * megapixel costs a few milliseconds of the event loop (the runner draws many images in the server
 * process). The enlarged rows compress to almost nothing: repeated rows use PNG's "Up" filter (all
 * zeros) and repeated pixels the "Sub" filter.
 */
const CELL = 4;

/** The scanline buffer (filtered, ready to deflate) of the picture of `opts`. */
function scanlines(opts: RenderImageOptions): Uint8Array {
  checkSize(opts.width, opts.height);
  const { width: w, height: h } = opts;
  const cw = Math.ceil(w / CELL);
  const ch = Math.ceil(h / CELL);
  const cv = rasterize(planImage(opts), cw, ch);
  const src = cv.data;
  const stride = w * 3 + 1;
  const raw = new Uint8Array(stride * h);
  for (let y = 0; y < h; y++) {
    const row = y * stride;
    if (y % CELL !== 0) {
      raw[row] = 2; // Up: identical to the row above; the filtered bytes stay 0.
      continue;
    }
    raw[row] = 1; // Sub: each byte minus the one 3 bytes (a pixel) to its left.
    const srcRow = (y / CELL) * (cw * 3 + 1) + 1; // the canvas rows carry a filter byte first
    let pr = 0;
    let pg = 0;
    let pb = 0;
    for (let x = 0; x < w; x++) {
      const si = srcRow + Math.floor(x / CELL) * 3;
      const r = src[si];
      const g = src[si + 1];
      const b = src[si + 2];
      const o = row + 1 + x * 3;
      raw[o] = (r - pr) & 0xff;
      raw[o + 1] = (g - pg) & 0xff;
      raw[o + 2] = (b - pb) & 0xff;
      pr = r;
      pg = g;
      pb = b;
    }
  }
  return raw;
}

/** A PNG file of `width` x `height` px RGB from its deflated scanlines (IHDR, IDAT, IEND). */
function assemblePng(width: number, height: number, idat: Uint8Array): Uint8Array {
  const ihdr = new Uint8Array(13);
  const dv = new DataView(ihdr.buffer);
  dv.setUint32(0, width);
  dv.setUint32(4, height);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour RGB
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering
  ihdr[12] = 0; // no interlace
  const parts = [PNG_SIGNATURE, pngChunk("IHDR", ihdr), pngChunk("IDAT", idat), pngChunk("IEND", new Uint8Array(0))];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Renders the picture of `opts` as a PNG file (8-bit RGB, exactly `width` x `height` px; IHDR holds
 * that size). Deterministic. Throws `RangeError` for sizes that are not integers in 1..4096.
 * About 40 ms for 1024x1024 (rasterization and deflate on the calling thread); prefer
 * {@link renderPngAsync} on a server.
 */
export function renderPng(opts: RenderImageOptions): Uint8Array {
  const raw = scanlines(opts);
  const idat = deflateSync(raw, { level: PNG_ZLIB_LEVEL });
  return assemblePng(opts.width, opts.height, new Uint8Array(idat.buffer, idat.byteOffset, idat.byteLength));
}

/**
 * Same bytes as {@link renderPng}, but the deflate step (most of the work) runs on the libuv thread
 * pool, keeping the event loop free; only rasterization runs on the calling thread.
 */
export async function renderPngAsync(opts: RenderImageOptions): Promise<Uint8Array> {
  const raw = scanlines(opts);
  const idat = await deflateAsync(raw, { level: PNG_ZLIB_LEVEL });
  return assemblePng(opts.width, opts.height, new Uint8Array(idat.buffer, idat.byteOffset, idat.byteLength));
}

/** The colour of {@link renderPlaceholderPng}: mid grey. */
const PLACEHOLDER_GREY = 0x80;

/**
 * A flat grey PNG of `width` x `height` px (8-bit RGB; IHDR holds that size): what the simulator answers
 * with `SIM_IMAGES=placeholder`, where only the gateway's own work on a job is measured. The first row
 * sets one grey pixel and repeats it ("Sub"), every other row repeats the row above ("Up"), so the
 * scanlines are almost all zeros and deflate (at the highest level: once per size) to a few kilobytes
 * (about 4.5 KB for 1024x1024).
 * Throws `RangeError` for sizes that are not integers in 1..4096.
 */
export function renderPlaceholderPng(width: number, height: number): Uint8Array {
  checkSize(width, height);
  const raw = new Uint8Array((width * 3 + 1) * height);
  raw[0] = 1; // Sub
  raw.fill(PLACEHOLDER_GREY, 1, 4);
  for (let y = 1; y < height; y++) raw[y * (width * 3 + 1)] = 2; // Up
  const idat = deflateSync(raw, { level: 9 });
  return assemblePng(width, height, new Uint8Array(idat.buffer, idat.byteOffset, idat.byteLength));
}
