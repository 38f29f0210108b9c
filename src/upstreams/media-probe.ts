/**
 * What a delivered output says about itself, read from its headers only (no decoding): the pixel size of
 * a PNG (imgB-2-pro's final charge by delivered megapixels, D26; OpenAI's `b64_json` images) and the
 * length of an MP4 (a video's delivered seconds when the source does not report them, D26). Hostile or
 * truncated input gives null, never an exception.
 */

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Width and height (px) of a PNG from its signature and IHDR chunk, or null when `bytes` is not a PNG. */
export function pngDimensions(bytes: Uint8Array): { width: number; height: number } | null {
  if (bytes.byteLength < 24 || PNG_SIGNATURE.some((b, i) => bytes[i] !== b)) return null;
  if (String.fromCharCode(bytes[12], bytes[13], bytes[14], bytes[15]) !== "IHDR") return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  return width > 0 && height > 0 ? { width, height } : null;
}

/** Most top-level boxes looked at before giving up (an MP4 has a handful: ftyp, moov, mdat, free...). */
const MAX_TOP_LEVEL_BOXES = 64;

/**
 * The length of an MP4 (ISO BMFF) file in seconds, from the movie header (`moov/mvhd`: duration /
 * timescale, versions 0 and 1), or null when `bytes` holds no readable movie header or a zero length.
 * Only the box headers on the way are read: cheap on a 500 MB file.
 */
export function mp4DurationSec(bytes: Uint8Array): number | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
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

/** The first box of `type` laid out between `start` and `end`, with its payload offset, or null. */
function findBox(bytes: Uint8Array, view: DataView, start: number, end: number, type: string): { body: number; end: number } | null {
  let at = start;
  for (let i = 0; i < MAX_TOP_LEVEL_BOXES && at + 8 <= end; i++) {
    let size = view.getUint32(at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > end) return null;
      size = Number(view.getBigUint64(at + 8));
      header = 16;
    } else if (size === 0) {
      size = end - at;
    }
    if (size < header || at + size > end) return null;
    const name = String.fromCharCode(bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]);
    if (name === type) return { body: at + header, end: at + size };
    at += size;
  }
  return null;
}
