/**
 * Small image files in the formats real upstreams deliver besides PNG (JPEG, WebP, GIF), made once by a
 * real encoder (libvips through `sharp` 0.35.4, 37 x 23 px of one colour), kept here as base64 so the
 * tests need no encoder: the probe is checked against files it did not write. And an independent reading
 * of a PNG's and an MP4's size for the tests that compare what the gateway reports with the file.
 */
import { inflateSync } from "node:zlib";
import { parseBuffer } from "music-metadata";

const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));

/** Width and height of every fixture below. */
export const FIXTURE_SIZE = { width: 37, height: 23 } as const;

/** Baseline JPEG (JFIF, quality 20). */
export const JPEG = b64(
  "/9j/2wBDACgcHiMeGSgjISMtKygwPGRBPDc3PHtYXUlkkYCZlo+AjIqgtObDoKrarYqMyP/L2u71////m8H////6/+b9//j/2wBDASstLTw1PHZBQXb4pYyl+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj/wAARCAAXACUDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAT/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFgEBAQEAAAAAAAAAAAAAAAAAAAME/8QAFBEBAAAAAAAAAAAAAAAAAAAAAP/aAAwDAQACEQMRAD8AnAUYwAAAAAAAAAH/2Q==",
);

/** Progressive JPEG with an EXIF segment (orientation 6) and an ICC profile before its frame header. */
export const JPEG_PROGRESSIVE_EXIF = b64(
  "/9j/4QC8RXhpZgAASUkqAAgAAAAGABIBAwABAAAABgAAABoBBQABAAAAVgAAABsBBQABAAAAXgAAACgBAwABAAAAAgAAABMCAwABAAAAAQAAAGmHBAABAAAAZgAAAAAAAAA4YwAA6AMAADhjAADoAwAABgAAkAcABAAAADAyMTABkQcABAAAAAECAwAAoAcABAAAADAxMDABoAMAAQAAAP//AAACoAQAAQAAACUAAAADoAQAAQAAABcAAAAAAAAA/+IB8ElDQ19QUk9GSUxFAAEBAAAB4GxjbXMEIAAAbW50clJHQiBYWVogB+IAAwAUAAkADgAdYWNzcE1TRlQAAAAAc2F3c2N0cmwAAAAAAAAAAAAAAAAAAPbWAAEAAAAA0y1oYW5keem/Vlo+AbaDI4VVRvdPqgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAKZGVzYwAAAPwAAAAkY3BydAAAASAAAAAid3RwdAAAAUQAAAAUY2hhZAAAAVgAAAAsclhZWgAAAYQAAAAUZ1hZWgAAAZgAAAAUYlhZWgAAAawAAAAUclRSQwAAAcAAAAAgZ1RSQwAAAcAAAAAgYlRSQwAAAcAAAAAgbWx1YwAAAAAAAAABAAAADGVuVVMAAAAIAAAAHABzAFIARwBCbWx1YwAAAAAAAAABAAAADGVuVVMAAAAGAAAAHABDAEMAMAAAWFlaIAAAAAAAAPbWAAEAAAAA0y1zZjMyAAAAAAABDD8AAAXd///zJgAAB5AAAP2S///7of///aIAAAPcAADAcVhZWiAAAAAAAABvoAAAOPIAAAOPWFlaIAAAAAAAAGKWAAC3iQAAGNpYWVogAAAAAAAAJKAAAA+FAAC2xHBhcmEAAAAAAAMAAAACZmkAAPKnAAANWQAAE9AAAApb/9sAQwAoHB4jHhkoIyEjLSsoMDxkQTw3Nzx7WF1JZJGAmZaPgIyKoLTmw6Cq2q2KjMj/y9ru9f///5vB////+v/m/f/4/9sAQwErLS08NTx2QUF2+KWMpfj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4+Pj4/8IAEQgAFwAlAwEiAAIRAQMRAf/EABUAAQEAAAAAAAAAAAAAAAAAAAAD/8QAFgEBAQEAAAAAAAAAAAAAAAAAAAID/9oADAMBAAIQAxAAAAGYrEAAAAD/xAAUEAEAAAAAAAAAAAAAAAAAAAAw/9oACAEBAAEFAn//xAAUEQEAAAAAAAAAAAAAAAAAAAAg/9oACAEDAQE/AV//xAAUEQEAAAAAAAAAAAAAAAAAAAAg/9oACAECAQE/AV//xAAUEAEAAAAAAAAAAAAAAAAAAAAw/9oACAEBAAY/An//xAAUEAEAAAAAAAAAAAAAAAAAAAAw/9oACAEBAAE/IX//2gAMAwEAAgADAAAAEAAAAAAP/8QAFBEBAAAAAAAAAAAAAAAAAAAAIP/aAAgBAwEBPxBf/8QAFBEBAAAAAAAAAAAAAAAAAAAAIP/aAAgBAgEBPxBf/8QAFBABAAAAAAAAAAAAAAAAAAAAMP/aAAgBAQABPxB//9k=",
);

/** Lossy WebP (a `VP8 ` chunk). */
export const WEBP_LOSSY = b64("UklGRkIAAABXRUJQVlA4IDYAAAAwAwCdASolABcAPzmaxVuvKyekJWgB4CcJZwDRvA8KedAAAP7eElUUUf/6+8odikY59i0PYAA=");

/** Lossless WebP (a `VP8L` chunk). */
export const WEBP_LOSSLESS = b64("UklGRhwAAABXRUJQVlA4TBAAAAAvJIAFAAdQwChg/wMR0f8A");

/** Extended WebP with alpha (`VP8X`, `ALPH`, `VP8 `). */
export const WEBP_EXTENDED = b64("UklGRlgAAABXRUJQVlA4WAoAAAAQAAAAJAAAFgAAQUxQSAoAAAABB1DAiAhERP8DVlA4ICgAAADwAgCdASolABcAPzmcxluvKyekJWgB4CcJaQAAKUMVqAD+70/WoAAA");

/** GIF89a. */
export const GIF = b64("R0lGODlhJQAXAIAAAExpcQCAgCH5BAUAAAAALAAAAAAlABcAAAIbjI+py+0Po5y02ouz3rz7D4biSJbmiabqyo4FADs=");

/**
 * A PNG's size read by decoding it, not from its header alone: the IHDR's colour type and bit depth give
 * the bytes of a row, and the inflated IDAT data must hold exactly `height` rows of `1 + row` bytes
 * (non-interlaced). Throws when the file is not such a PNG.
 */
export function decodedPngSize(png: Uint8Array): { width: number; height: number } {
  const buf = Buffer.from(png);
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  let depth = 0;
  const idat: Buffer[] = [];
  while (at + 8 <= buf.length) {
    const length = buf.readUInt32BE(at);
    const type = buf.toString("latin1", at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      depth = data[8];
      channels = ({ 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 } as Record<number, number>)[data[9]] ?? 0;
      if (data[12] !== 0) throw new Error("interlaced PNG");
    } else if (type === "IDAT") {
      idat.push(data);
    }
    at += 12 + length;
  }
  const rowBytes = Math.ceil((width * channels * depth) / 8);
  const pixels = inflateSync(Buffer.concat(idat));
  if (rowBytes === 0 || pixels.length !== height * (1 + rowBytes)) throw new Error(`${pixels.length} bytes of pixels for ${width}x${height}`);
  return { width, height };
}

/** What an MP4's video track says, read by another parser (music-metadata) and, for the frames, the `stsz` box. */
export interface IndependentVideoFacts {
  width: number;
  height: number;
  /** The video track's length, seconds. */
  durationSec: number;
  /** Samples of the first `stsz` (the first track's: the video track in the files tested). */
  frames: number;
}

/**
 * The facts of an MP4 as music-metadata reads them (its visual sample entry's pixel size and the video
 * track's duration), with the frame count of the first `stsz` box (a sample table the gateway's probe
 * does not read). Throws when the file has no video track.
 */
export async function independentVideoFacts(mp4: Uint8Array): Promise<IndependentVideoFacts> {
  const meta = await parseBuffer(mp4, { mimeType: "video/mp4" });
  const video = (meta.format.trackInfo ?? []).find((t) => t.video !== undefined);
  if (video?.video?.pixelWidth === undefined || video.video.pixelHeight === undefined || video.duration === undefined) throw new Error("no video track");
  const buf = Buffer.from(mp4);
  const stsz = buf.indexOf("stsz", 0, "latin1");
  if (stsz < 0) throw new Error("no stsz");
  // type, version and flags (4), sample_size (4), sample_count (4).
  return { width: video.video.pixelWidth, height: video.video.pixelHeight, durationSec: video.duration, frames: buf.readUInt32BE(stsz + 12) };
}
