/**
 * What a delivered output says about itself, read from its headers only (no decoding): its format (from
 * its first bytes, not from what the source said), the pixel size of a PNG, JPEG, WebP, GIF or SVG image,
 * and the length, pixel size, frame rate and frame count of an MP4 (ISO BMFF) video. The gateway reports
 * these facts of every stored output (the job's `output`, the dialects' answers; issue 42 point 5) and
 * bills by them (imgB-2-pro's delivered megapixels, a video's delivered seconds: D26).
 *
 * Hostile or truncated input gives null (or a null fact), never an exception: every read is bounded by
 * the box or chunk that holds it, loops are capped, and {@link probeMedia} returns null should a reader
 * still fail.
 */

/** The facts of one media file; each fact null when the file does not say it. */
export interface MediaFacts {
  /** The file's own type, read from its bytes: `image/png`, `image/jpeg`, `image/webp`, `image/gif`, `image/svg+xml`, `video/mp4`, `video/quicktime`, `video/webm`. */
  contentType: string;
  /** Pixels (an MP4: its first video track's display size, rotation applied). */
  width: number | null;
  height: number | null;
  /** Seconds (video: the movie header's duration / timescale). */
  durationSec: number | null;
  /** Frames per second of the first video track (frames x timescale / their total duration), 3 decimals. */
  fps: number | null;
  /** Frames (samples) of the first video track. */
  frames: number | null;
}

type Size = { width: number; height: number };

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Largest pixel side accepted from a header (larger: the header is nonsense). */
const MAX_SIDE = 1 << 24;

/** A size when both sides are whole numbers in 1..{@link MAX_SIDE}, else null. */
function sizeOf(width: number, height: number): Size | null {
  const ok = (v: number) => Number.isInteger(v) && v > 0 && v <= MAX_SIDE;
  return ok(width) && ok(height) ? { width, height } : null;
}

function ascii(bytes: Uint8Array, at: number, length: number): string {
  if (at + length > bytes.byteLength) return "";
  let s = "";
  for (let i = 0; i < length; i++) s += String.fromCharCode(bytes[at + i]);
  return s;
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Width and height (px) of a PNG from its signature and IHDR chunk, or null when `bytes` is not a PNG. */
export function pngDimensions(bytes: Uint8Array): Size | null {
  if (bytes.byteLength < 24 || PNG_SIGNATURE.some((b, i) => bytes[i] !== b)) return null;
  if (ascii(bytes, 12, 4) !== "IHDR") return null;
  const view = viewOf(bytes);
  return sizeOf(view.getUint32(16), view.getUint32(20));
}

/** Most JPEG segments looked at before the frame header (a file has a dozen or so). */
const MAX_JPEG_SEGMENTS = 512;

/**
 * Width and height (px) of a JPEG from its first frame header (SOF0..SOF15 but DHT, JPG and DAC), or
 * null when `bytes` is not a JPEG, or a scan, the end or the end of `bytes` comes first. The stored
 * pixel size: an EXIF orientation is not applied.
 */
export function jpegDimensions(bytes: Uint8Array): Size | null {
  if (bytes.byteLength < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return null;
  const view = viewOf(bytes);
  let at = 2;
  for (let i = 0; i < MAX_JPEG_SEGMENTS; i++) {
    if (at >= bytes.byteLength || bytes[at] !== 0xff) return null;
    // Fill bytes: any number of 0xFF before a marker.
    while (at < bytes.byteLength && bytes[at] === 0xff) at++;
    if (at >= bytes.byteLength) return null;
    const marker = bytes[at];
    at++;
    // Markers without a length: TEM and RST0..7 (SOI again would be nonsense: stop).
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;
    // End of image or start of scan before any frame header, or a stray 0x00: no size here.
    if (marker === 0xd9 || marker === 0xda || marker === 0xd8 || marker === 0x00) return null;
    if (at + 2 > bytes.byteLength) return null;
    const length = view.getUint16(at);
    if (length < 2 || at + length > bytes.byteLength) return null;
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      // Length (2), precision (1), lines (2), samples per line (2).
      if (length < 7) return null;
      return sizeOf(view.getUint16(at + 5), view.getUint16(at + 3));
    }
    at += length;
  }
  return null;
}

/**
 * Width and height (px) of a WebP from its first chunk: `VP8 ` (lossy: the key frame's 14-bit sizes),
 * `VP8L` (lossless: 14-bit sizes minus one) or `VP8X` (extended: the 24-bit canvas size minus one), or
 * null when `bytes` is not a WebP or the chunk is short.
 */
export function webpDimensions(bytes: Uint8Array): Size | null {
  if (bytes.byteLength < 30 || ascii(bytes, 0, 4) !== "RIFF" || ascii(bytes, 8, 4) !== "WEBP") return null;
  const view = viewOf(bytes);
  const chunk = ascii(bytes, 12, 4);
  const payload = 20;
  if (chunk === "VP8 ") {
    // Frame tag (3 bytes; bit 0 clear for a key frame), start code 9D 01 2A, then the sizes.
    if ((bytes[payload] & 1) !== 0 || bytes[payload + 3] !== 0x9d || bytes[payload + 4] !== 0x01 || bytes[payload + 5] !== 0x2a) return null;
    return sizeOf(view.getUint16(payload + 6, true) & 0x3fff, view.getUint16(payload + 8, true) & 0x3fff);
  }
  if (chunk === "VP8L") {
    if (bytes[payload] !== 0x2f) return null;
    const bits = view.getUint32(payload + 1, true);
    return sizeOf((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (chunk === "VP8X") {
    const u24 = (at: number) => bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16);
    return sizeOf(u24(payload + 4) + 1, u24(payload + 7) + 1);
  }
  return null;
}

/** Width and height (px) of a GIF (its logical screen), or null when `bytes` is not a GIF. */
export function gifDimensions(bytes: Uint8Array): Size | null {
  const signature = ascii(bytes, 0, 6);
  if ((signature !== "GIF87a" && signature !== "GIF89a") || bytes.byteLength < 10) return null;
  const view = viewOf(bytes);
  return sizeOf(view.getUint16(6, true), view.getUint16(8, true));
}

/** Bytes of an SVG read for its root element. */
const SVG_HEAD_BYTES = 4096;

/** The opening `<svg ...>` tag of an SVG document, or null (text before it: a BOM, an XML declaration, comments, a doctype). */
function svgRootTag(bytes: Uint8Array): string | null {
  const head = new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, SVG_HEAD_BYTES));
  const m = /^\uFEFF?\s*(?:<\?xml[^>]*\?>\s*)?(?:(?:<!--[\s\S]*?-->|<!DOCTYPE[^>]*>)\s*)*(<svg(?:\s[^>]*)?>)/i.exec(head);
  return m ? m[1] : null;
}

/** A length attribute of the SVG root in pixels (a plain number or `px`), or null. */
function svgLength(tag: string, name: string): number | null {
  const m = new RegExp(`\\s${name}\\s*=\\s*["']\\s*([0-9]+(?:\\.[0-9]+)?)\\s*(px)?\\s*["']`).exec(tag);
  return m ? Number(m[1]) : null;
}

/**
 * Width and height (px) of an SVG: its root's `width` and `height` in pixels, else its `viewBox` size
 * (rounded); null when `bytes` is not an SVG document or says neither (percentages, other units).
 */
export function svgDimensions(bytes: Uint8Array): Size | null {
  const tag = svgRootTag(bytes);
  if (tag === null) return null;
  const w = svgLength(tag, "width");
  const h = svgLength(tag, "height");
  if (w !== null && h !== null) return sizeOf(Math.round(w), Math.round(h));
  const vb = /\sviewBox\s*=\s*["']\s*-?[0-9.]+[\s,]+-?[0-9.]+[\s,]+([0-9.]+)[\s,]+([0-9.]+)\s*["']/.exec(tag);
  return vb ? sizeOf(Math.round(Number(vb[1])), Math.round(Number(vb[2]))) : null;
}

/** Most boxes looked at on one level of an MP4 before giving up (a level has a handful: ftyp, moov, mdat, free...). */
const MAX_BOXES_PER_LEVEL = 64;

/** A box of an ISO BMFF file: its type, payload start and end (offsets into the bytes). */
interface Box {
  type: string;
  body: number;
  end: number;
}

/** The boxes laid out between `start` and `end`, in order, at most {@link MAX_BOXES_PER_LEVEL}; stops at the first malformed one. */
function boxesIn(bytes: Uint8Array, view: DataView, start: number, end: number): Box[] {
  const out: Box[] = [];
  let at = start;
  while (out.length < MAX_BOXES_PER_LEVEL && at + 8 <= end) {
    let size = view.getUint32(at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > end) break;
      size = Number(view.getBigUint64(at + 8));
      header = 16;
    } else if (size === 0) {
      size = end - at;
    }
    if (size < header || at + size > end) break;
    out.push({ type: ascii(bytes, at + 4, 4), body: at + header, end: at + size });
    at += size;
  }
  return out;
}

/** The first box of `type` between `start` and `end`, or null. */
function findBox(bytes: Uint8Array, view: DataView, start: number, end: number, type: string): Box | null {
  return boxesIn(bytes, view, start, end).find((b) => b.type === type) ?? null;
}

/** The box at the end of `path` (types, one a level) inside `parent`, or null. */
function boxAt(bytes: Uint8Array, view: DataView, parent: Box, path: string[]): Box | null {
  let box: Box | null = parent;
  for (const type of path) {
    if (box === null) return null;
    box = findBox(bytes, view, box.body, box.end, type);
  }
  return box;
}

/**
 * The length of an MP4 (ISO BMFF) file in seconds, from the movie header (`moov/mvhd`: duration /
 * timescale, versions 0 and 1), or null when `bytes` holds no readable movie header or a zero length.
 * Only the box headers on the way are read: cheap on a 500 MB file.
 */
export function mp4DurationSec(bytes: Uint8Array): number | null {
  const view = viewOf(bytes);
  const moov = findBox(bytes, view, 0, bytes.byteLength, "moov");
  if (moov === null) return null;
  const mvhd = findBox(bytes, view, moov.body, moov.end, "mvhd");
  if (mvhd === null) return null;
  const version = bytes[mvhd.body];
  // Full box: version (1 byte), flags (3); then creation and modification times (4 or 8 bytes each).
  const at = mvhd.body + 4 + (version === 1 ? 16 : 8);
  const need = at + 4 + (version === 1 ? 8 : 4);
  if (need > mvhd.end) return null;
  const timescale = view.getUint32(at);
  const duration = version === 1 ? Number(view.getBigUint64(at + 4)) : view.getUint32(at + 4);
  if (timescale === 0 || duration === 0 || !Number.isFinite(duration / timescale)) return null;
  return duration / timescale;
}

/** What an MP4's first video track says: display size, frame rate and frame count (each null when unreadable). */
export interface Mp4VideoTrack {
  width: number | null;
  height: number | null;
  fps: number | null;
  frames: number | null;
}

/**
 * The first video track (`moov/trak` whose `mdia/hdlr` handler is `vide`) of an MP4: its display size
 * from the track header (`tkhd` width and height, 16.16 fixed point, swapped when its matrix turns the
 * picture a quarter turn), else from the first visual sample entry of `stsd` (`avc1`, `hvc1`, ...: the
 * coded width and height); its frame count and rate from `stts` (the samples and their durations) and
 * the media header's timescale (`mdhd`). Null when `bytes` has no movie box or no video track.
 */
export function mp4VideoTrack(bytes: Uint8Array): Mp4VideoTrack | null {
  const view = viewOf(bytes);
  const moov = findBox(bytes, view, 0, bytes.byteLength, "moov");
  if (moov === null) return null;
  for (const trak of boxesIn(bytes, view, moov.body, moov.end)) {
    if (trak.type !== "trak") continue;
    const hdlr = boxAt(bytes, view, trak, ["mdia", "hdlr"]);
    // Full box (4), pre_defined (4), handler_type (4).
    if (hdlr === null || hdlr.body + 12 > hdlr.end || ascii(bytes, hdlr.body + 8, 4) !== "vide") continue;
    const size = tkhdSize(bytes, view, boxAt(bytes, view, trak, ["tkhd"])) ?? sampleEntrySize(bytes, view, boxAt(bytes, view, trak, ["mdia", "minf", "stbl", "stsd"]));
    const timing = sttsTiming(bytes, view, boxAt(bytes, view, trak, ["mdia", "mdhd"]), boxAt(bytes, view, trak, ["mdia", "minf", "stbl", "stts"]));
    return { width: size?.width ?? null, height: size?.height ?? null, fps: timing?.fps ?? null, frames: timing?.frames ?? null };
  }
  return null;
}

/** The display size of a `tkhd` (versions 0 and 1), or null (no box, a zero size). */
function tkhdSize(bytes: Uint8Array, view: DataView, tkhd: Box | null): Size | null {
  if (tkhd === null) return null;
  const version = bytes[tkhd.body];
  // Full box (4); times, track id, reserved and duration (20 or 32); reserved (8), layer, group, volume, reserved (8).
  const matrix = tkhd.body + 4 + (version === 1 ? 32 : 20) + 16;
  if (matrix + 36 + 8 > tkhd.end) return null;
  const width = Math.round(view.getUint32(matrix + 36) / 65536);
  const height = Math.round(view.getUint32(matrix + 40) / 65536);
  const a = view.getInt32(matrix);
  const d = view.getInt32(matrix + 16);
  const quarterTurn = a === 0 && d === 0;
  return quarterTurn ? sizeOf(height, width) : sizeOf(width, height);
}

/** The coded size of the first visual sample entry of an `stsd`, or null. */
function sampleEntrySize(bytes: Uint8Array, view: DataView, stsd: Box | null): Size | null {
  if (stsd === null || stsd.body + 8 > stsd.end) return null;
  // Full box (4), entry count (4), then the entries; a visual entry's width and height follow its
  // reserved (6), data reference index (2), pre_defined and reserved (16) bytes.
  const entry = boxesIn(bytes, view, stsd.body + 8, stsd.end)[0];
  if (entry === undefined || entry.body + 28 > entry.end) return null;
  return sizeOf(view.getUint16(entry.body + 24), view.getUint16(entry.body + 26));
}

/** Most `stts` entries read (a constant frame rate has one; variable rates a few per frame). */
const MAX_STTS_ENTRIES = 1_000_000;

/** Frames and frames per second from `mdhd`'s timescale and `stts`'s sample counts and durations, or null. */
function sttsTiming(bytes: Uint8Array, view: DataView, mdhd: Box | null, stts: Box | null): { fps: number | null; frames: number } | null {
  if (stts === null || stts.body + 8 > stts.end) return null;
  const count = Math.min(view.getUint32(stts.body + 4), MAX_STTS_ENTRIES, Math.floor((stts.end - stts.body - 8) / 8));
  let frames = 0;
  let ticks = 0;
  for (let i = 0; i < count; i++) {
    const at = stts.body + 8 + i * 8;
    const n = view.getUint32(at);
    frames += n;
    ticks += n * view.getUint32(at + 4);
  }
  if (frames === 0) return null;
  let timescale = 0;
  if (mdhd !== null) {
    const at = mdhd.body + 4 + (bytes[mdhd.body] === 1 ? 16 : 8);
    if (at + 4 <= mdhd.end) timescale = view.getUint32(at);
  }
  const fps = timescale > 0 && ticks > 0 ? Math.round(((frames * timescale) / ticks) * 1000) / 1000 : null;
  return { fps: fps !== null && Number.isFinite(fps) && fps > 0 ? fps : null, frames };
}

/** The content type of an ISO BMFF file from its `ftyp` major brand (`qt  `: QuickTime), or null when the first box is no `ftyp`. */
function isoContentType(bytes: Uint8Array): string | null {
  if (bytes.byteLength < 12 || ascii(bytes, 4, 4) !== "ftyp") return null;
  const size = viewOf(bytes).getUint32(0);
  if (size < 12) return null;
  return ascii(bytes, 8, 4) === "qt  " ? "video/quicktime" : "video/mp4";
}

const EBML_MAGIC = [0x1a, 0x45, 0xdf, 0xa3];

/**
 * The facts of a stored output, from its bytes (see {@link MediaFacts}), or null when the format is none
 * of PNG, JPEG, WebP, GIF, SVG, MP4/QuickTime or WebM (a WebM's facts are not read: its type only).
 * Never throws.
 */
export function probeMedia(bytes: Uint8Array): MediaFacts | null {
  try {
    return probe(bytes);
  } catch {
    return null;
  }
}

/**
 * The media type of `bytes` by its leading bytes (the formats {@link probeMedia} reads), or null. Reads no
 * more than the signature (an SVG: its root tag). Never throws.
 */
export function mediaTypeOf(bytes: Uint8Array): string | null {
  if (bytes.byteLength >= 8 && PNG_SIGNATURE.every((b, i) => bytes[i] === b)) return "image/png";
  if (bytes.byteLength >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 4) === "WEBP") return "image/webp";
  if (/^GIF8[79]a$/.test(ascii(bytes, 0, 6))) return "image/gif";
  const iso = isoContentType(bytes);
  if (iso !== null) return iso;
  if (bytes.byteLength >= 4 && EBML_MAGIC.every((b, i) => bytes[i] === b)) return "video/webm";
  if (svgRootTag(bytes) !== null) return "image/svg+xml";
  return null;
}

function probe(bytes: Uint8Array): MediaFacts | null {
  const contentType = mediaTypeOf(bytes);
  const image = (size: Size | null): MediaFacts => ({
    contentType: contentType as string,
    width: size?.width ?? null,
    height: size?.height ?? null,
    durationSec: null,
    fps: null,
    frames: null,
  });
  switch (contentType) {
    case null:
      return null;
    case "image/png":
      return image(pngDimensions(bytes));
    case "image/jpeg":
      return image(jpegDimensions(bytes));
    case "image/webp":
      return image(webpDimensions(bytes));
    case "image/gif":
      return image(gifDimensions(bytes));
    case "image/svg+xml":
      return image(svgDimensions(bytes));
    case "video/webm":
      return image(null);
    default: {
      // MP4 or QuickTime (ISO BMFF).
      const track = mp4VideoTrack(bytes);
      return { contentType, width: track?.width ?? null, height: track?.height ?? null, durationSec: mp4DurationSec(bytes), fps: track?.fps ?? null, frames: track?.frames ?? null };
    }
  }
}
