/**
 * Reading of the committed MP4 clips: a box walk of `moov` giving each track's sample bytes, durations,
 * sync samples, `stsd` and edit-list start. Only what the simulator's own clips need (no reordered
 * frames).
 */
import { readFileSync } from "node:fs";

/** A box of an MP4 file: its type and byte offsets. */
interface Box {
  type: string;
  /** Offset of the box header. */
  start: number;
  /** Offset of the payload (after size/type and any 64-bit size). */
  body: number;
  end: number;
}

/** The four-character code at `at`. */
function fourcc(buf: Uint8Array, at: number): string {
  return String.fromCharCode(buf[at], buf[at + 1], buf[at + 2], buf[at + 3]);
}

/** An MP4 file being read: its bytes and a view of them. */
interface Mp4File {
  buf: Uint8Array;
  dv: DataView;
}

/** The boxes laid out between `start` and `end`. */
function boxesIn(buf: Uint8Array, dv: DataView, start: number, end: number): Box[] {
  const out: Box[] = [];
  let o = start;
  while (o + 8 <= end) {
    let size = dv.getUint32(o);
    const type = fourcc(buf, o + 4);
    let body = o + 8;
    if (size === 1) {
      size = Number(dv.getBigUint64(o + 8));
      body += 8;
    } else if (size === 0) size = end - o;
    if (size < body - o || o + size > end) throw new Error(`bad MP4 box ${type} at ${o}`);
    out.push({ type, start: o, body, end: o + size });
    o += size;
  }
  return out;
}

/** The child box `type` of `parent`; throws when missing. */
function child(f: Mp4File, parent: Box, type: string): Box {
  const b = boxesIn(f.buf, f.dv, parent.body, parent.end).find((x) => x.type === type);
  if (!b) throw new Error(`MP4 box ${type} missing in ${parent.type}`);
  return b;
}

/** The child box `type` of `parent`, if any. */
function maybe(f: Mp4File, parent: Box, type: string): Box | undefined {
  return boxesIn(f.buf, f.dv, parent.body, parent.end).find((x) => x.type === type);
}

/** A parsed track of a source clip. */
export interface SourceTrack {
  handler: string;
  /** Media timescale (units per second). */
  timescale: number;
  /** The whole `stsd` box, copied unchanged. */
  stsd: Uint8Array;
  /** Sample bytes (views into the source file), in decoding order. */
  samples: Uint8Array[];
  /** Per-sample durations in media units. */
  durations: number[];
  /** Per-sample sync flags; null when every sample is a sync sample (no `stss`). */
  sync: boolean[] | null;
  /** Media time (media units) where presentation starts (first non-empty edit), e.g. AAC priming. */
  mediaTime: number;
  /** Track size in pixels (0 for audio). */
  width: number;
  height: number;
}

/** Media time (media units) where presentation of `trak` starts: its first non-empty edit, else 0. */
function editMediaTime(f: Mp4File, trak: Box): number {
  const { buf, dv } = f;
  let mediaTime = 0;
  const edts = maybe(f, trak, "edts");
  const elst = edts && maybe(f, edts, "elst");
  if (elst) {
    const v = buf[elst.body];
    const count = dv.getUint32(elst.body + 4);
    let o = elst.body + 8;
    for (let i = 0; i < count; i++) {
      const mt = v === 1 ? Number(dv.getBigInt64(o + 8)) : dv.getInt32(o + 4);
      o += v === 1 ? 20 : 12;
      if (mt >= 0) {
        mediaTime = mt;
        break;
      }
    }
  }
  return mediaTime;
}

/** Sample sizes, durations and sync flags of a sample table (`stbl`). */
function sampleTables(f: Mp4File, stbl: Box): { sizes: number[]; durations: number[]; sync: boolean[] | null } {
  const { dv } = f;
  const stsz = child(f, stbl, "stsz");
  const fixedSize = dv.getUint32(stsz.body + 4);
  const count = dv.getUint32(stsz.body + 8);
  const sizes: number[] = [];
  for (let i = 0; i < count; i++) sizes.push(fixedSize || dv.getUint32(stsz.body + 12 + 4 * i));

  const durations: number[] = [];
  const stts = child(f, stbl, "stts");
  for (let e = 0, n = dv.getUint32(stts.body + 4); e < n; e++) {
    const c = dv.getUint32(stts.body + 8 + 8 * e);
    const d = dv.getUint32(stts.body + 12 + 8 * e);
    for (let i = 0; i < c; i++) durations.push(d);
  }
  if (durations.length !== count) throw new Error("MP4 stts/stsz sample counts differ");

  const ctts = maybe(f, stbl, "ctts");
  if (ctts) {
    for (let e = 0, n = dv.getUint32(ctts.body + 4); e < n; e++) {
      if (dv.getUint32(ctts.body + 12 + 8 * e) !== 0) throw new Error("MP4 clips with reordered frames are not supported");
    }
  }

  let sync: boolean[] | null = null;
  const stss = maybe(f, stbl, "stss");
  if (stss) {
    sync = new Array<boolean>(count).fill(false);
    for (let e = 0, n = dv.getUint32(stss.body + 4); e < n; e++) sync[dv.getUint32(stss.body + 8 + 4 * e) - 1] = true;
  }
  return { sizes, durations, sync };
}

/** The bytes of each sample (views into the file), from the chunk offsets and the sample-to-chunk table. */
function sampleBytes(f: Mp4File, stbl: Box, sizes: readonly number[]): Uint8Array[] {
  const { buf, dv } = f;
  const count = sizes.length;
  const chunkOffsets: number[] = [];
  const stco = maybe(f, stbl, "stco");
  const co64 = maybe(f, stbl, "co64");
  if (stco) {
    for (let i = 0, n = dv.getUint32(stco.body + 4); i < n; i++) chunkOffsets.push(dv.getUint32(stco.body + 8 + 4 * i));
  } else if (co64) {
    for (let i = 0, n = dv.getUint32(co64.body + 4); i < n; i++) {
      chunkOffsets.push(Number(dv.getBigUint64(co64.body + 8 + 8 * i)));
    }
  } else throw new Error("MP4 without chunk offsets");

  const stsc = child(f, stbl, "stsc");
  const stscEntries: { first: number; perChunk: number }[] = [];
  for (let e = 0, n = dv.getUint32(stsc.body + 4); e < n; e++) {
    stscEntries.push({ first: dv.getUint32(stsc.body + 8 + 12 * e), perChunk: dv.getUint32(stsc.body + 12 + 12 * e) });
  }
  const samples: Uint8Array[] = [];
  let entry = 0;
  for (let c = 0; c < chunkOffsets.length && samples.length < count; c++) {
    while (entry + 1 < stscEntries.length && stscEntries[entry + 1].first <= c + 1) entry++;
    let o = chunkOffsets[c];
    for (let k = 0; k < stscEntries[entry].perChunk && samples.length < count; k++) {
      const size = sizes[samples.length];
      if (o + size > buf.length) throw new Error("MP4 sample outside the file");
      samples.push(buf.subarray(o, o + size));
      o += size;
    }
  }
  if (samples.length !== count) throw new Error("MP4 chunk table does not cover every sample");
  return samples;
}

/** One `trak` of the file. */
function readTrack(f: Mp4File, trak: Box): SourceTrack {
  const { buf, dv } = f;
  const tkhd = child(f, trak, "tkhd");
  const tkVersion = buf[tkhd.body];
  const sizeAt = tkhd.body + (tkVersion === 1 ? 88 : 76);
  const width = dv.getUint32(sizeAt) / 65536;
  const height = dv.getUint32(sizeAt + 4) / 65536;
  const mediaTime = editMediaTime(f, trak);
  const mdia = child(f, trak, "mdia");
  const mdhd = child(f, mdia, "mdhd");
  const timescale = dv.getUint32(mdhd.body + (buf[mdhd.body] === 1 ? 20 : 12));
  const handler = fourcc(buf, child(f, mdia, "hdlr").body + 8);
  const stbl = child(f, child(f, mdia, "minf"), "stbl");
  const stsd = child(f, stbl, "stsd");
  const { sizes, durations, sync } = sampleTables(f, stbl);
  const samples = sampleBytes(f, stbl, sizes);
  return {
    handler,
    timescale,
    stsd: buf.subarray(stsd.start, stsd.end),
    samples,
    durations,
    sync,
    mediaTime,
    width,
    height,
  };
}

/** Every track of the MP4 file `buf`; throws on a file the simulator cannot use. */
function parseTracks(buf: Uint8Array): SourceTrack[] {
  const f: Mp4File = { buf, dv: new DataView(buf.buffer, buf.byteOffset, buf.byteLength) };
  const top = boxesIn(buf, f.dv, 0, buf.length);
  const moov = top.find((b) => b.type === "moov");
  if (!moov) throw new Error("MP4 without moov");
  return boxesIn(buf, f.dv, moov.body, moov.end)
    .filter((b) => b.type === "trak")
    .map((trak) => readTrack(f, trak));
}

/** The first track with handler `handler` of the MP4 file `bytes`; throws when it has none or no samples. */
export function parseTrack(bytes: Uint8Array, handler: "vide" | "soun"): SourceTrack {
  const t = parseTracks(bytes).find((x) => x.handler === handler);
  if (!t) throw new Error(`MP4 has no ${handler} track`);
  if (t.samples.length === 0) throw new Error("MP4 track has no samples");
  return t;
}

/** Parsed clip tracks by `file#handler`. */
const clipCache = new Map<string, SourceTrack>();

/** The first track with handler `handler` of the committed clip `file` (parsed once, then cached). */
export function clipTrack(file: string, handler: "vide" | "soun"): SourceTrack {
  const key = `${file}#${handler}`;
  let t = clipCache.get(key);
  if (!t) {
    const bytes = new Uint8Array(readFileSync(new URL(`../clips/${file}`, import.meta.url)));
    t = parseTracks(bytes).find((x) => x.handler === handler);
    if (!t) throw new Error(`clip ${file} has no ${handler} track`);
    if (t.samples.length === 0) throw new Error(`clip ${file} has no samples`);
    clipCache.set(key, t);
  }
  return t;
}
