/** Writing of progressive ("faststart") MP4 files: `ftyp`, `moov` with one `trak` per track, `mdat`. */
import type { SourceTrack } from "./mp4-read.ts";

/** Big-endian field writer for box payloads. */
class Fields {
  private readonly bytes: number[] = [];
  u8(v: number): this {
    this.bytes.push(v & 0xff);
    return this;
  }
  u16(v: number): this {
    return this.u8(v >>> 8).u8(v);
  }
  u32(v: number): this {
    return this.u16(v >>> 16).u16(v);
  }
  str(s: string): this {
    for (let i = 0; i < s.length; i++) this.u8(s.charCodeAt(i));
    return this;
  }
  done(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

/** A box of `type` around `payload`. */
function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const size = 8 + payload.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, size);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  let o = 8;
  for (const p of payload) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A full box (version and flags) of `type` around `payload`. */
function fullBox(type: string, version: number, flags: number, ...payload: Uint8Array[]): Uint8Array {
  return box(type, new Fields().u8(version).u8(flags >>> 16).u16(flags).done(), ...payload);
}

/** A 32-bit table: entry count then the values. */
function table32(values: readonly number[], perEntry = 1): Uint8Array {
  const f = new Fields().u32(values.length / perEntry);
  for (const v of values) f.u32(v);
  return f.done();
}

/** The identity transformation matrix of `mvhd` and `tkhd`. */
const MATRIX = [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000];

/** Movie timescale (units per second) of written files. */
export const MOVIE_TIMESCALE = 1000;

/** A track to write. */
export interface OutTrack {
  id: number;
  src: SourceTrack;
  samples: Uint8Array[];
  durations: number[];
  sync: boolean[] | null;
  /** Sample counts of the track's chunks, in order. */
  chunks: number[];
  /** Presentation length in movie units. */
  movieDuration: number;
  /** Media time where presentation starts (edit list), media units. */
  mediaTime: number;
}

/** The `trak` box of `t`, its chunks at `chunkOffsets` (bytes from the file start). */
function writeTrak(t: OutTrack, chunkOffsets: readonly number[]): Uint8Array {
  const isVideo = t.src.handler === "vide";
  const mediaDuration = t.durations.reduce((a, b) => a + b, 0);
  const tkhd = new Fields()
    .u32(0) // creation time
    .u32(0) // modification time
    .u32(t.id)
    .u32(0)
    .u32(t.movieDuration)
    .u32(0)
    .u32(0)
    .u16(0) // layer
    .u16(0) // alternate group
    .u16(isVideo ? 0 : 0x0100) // volume
    .u16(0);
  for (const m of MATRIX) tkhd.u32(m);
  tkhd.u32(Math.round(t.src.width * 65536)).u32(Math.round(t.src.height * 65536));

  const elst = fullBox(
    "elst",
    0,
    0,
    new Fields().u32(1).u32(t.movieDuration).u32(t.mediaTime).u16(1).u16(0).done(),
  );

  const mdhd = new Fields().u32(0).u32(0).u32(t.src.timescale).u32(mediaDuration).u16(0x55c4).u16(0).done();
  const hdlr = new Fields()
    .u32(0)
    .str(t.src.handler)
    .u32(0)
    .u32(0)
    .u32(0)
    .str(isVideo ? "VideoHandler\0" : "SoundHandler\0")
    .done();
  const mhd = isVideo
    ? fullBox("vmhd", 0, 1, new Fields().u16(0).u16(0).u16(0).u16(0).done())
    : fullBox("smhd", 0, 0, new Fields().u16(0).u16(0).done());
  const dinf = box("dinf", fullBox("dref", 0, 0, new Fields().u32(1).done(), fullBox("url ", 0, 1)));

  const stts: number[] = [];
  for (const d of t.durations) {
    if (stts.length > 0 && stts[stts.length - 1] === d) stts[stts.length - 2]++;
    else stts.push(1, d);
  }
  const stsc: number[] = [];
  t.chunks.forEach((n, i) => {
    if (stsc.length === 0 || stsc[stsc.length - 2] !== n) stsc.push(i + 1, n, 1);
  });
  const stblParts = [
    t.src.stsd,
    fullBox("stts", 0, 0, table32(stts, 2)),
  ];
  if (t.sync) {
    const keys: number[] = [];
    t.sync.forEach((s, i) => {
      if (s) keys.push(i + 1);
    });
    stblParts.push(fullBox("stss", 0, 0, table32(keys)));
  }
  stblParts.push(
    fullBox("stsc", 0, 0, table32(stsc, 3)),
    fullBox("stsz", 0, 0, new Fields().u32(0).done(), table32(t.samples.map((s) => s.length))),
    fullBox("stco", 0, 0, table32(chunkOffsets)),
  );

  return box(
    "trak",
    fullBox("tkhd", 0, 3, tkhd.done()),
    box("edts", elst),
    box(
      "mdia",
      fullBox("mdhd", 0, 0, mdhd),
      fullBox("hdlr", 0, 0, hdlr),
      box("minf", mhd, dinf, box("stbl", ...stblParts)),
    ),
  );
}

/** Writes a progressive MP4 (`ftyp`, `moov`, `mdat`) with the tracks' chunks interleaved. */
export function writeMp4(tracks: OutTrack[], movieDuration: number): Uint8Array {
  const ftyp = box("ftyp", new Fields().str("isom").u32(512).str("isomiso2avc1mp41").done());

  // mdat layout: chunk k of every track, in track order, for k = 0, 1, ...
  const layout: { track: number; first: number; count: number }[] = [];
  const firsts = tracks.map(() => 0);
  const maxChunks = Math.max(...tracks.map((t) => t.chunks.length));
  for (let k = 0; k < maxChunks; k++) {
    tracks.forEach((t, ti) => {
      if (k < t.chunks.length) {
        layout.push({ track: ti, first: firsts[ti], count: t.chunks[k] });
        firsts[ti] += t.chunks[k];
      }
    });
  }
  let mdatSize = 8;
  for (const t of tracks) for (const s of t.samples) mdatSize += s.length;

  const buildMoov = (dataStart: number): Uint8Array => {
    const offsets: number[][] = tracks.map(() => []);
    let o = dataStart;
    for (const c of layout) {
      offsets[c.track].push(o);
      const t = tracks[c.track];
      for (let i = c.first; i < c.first + c.count; i++) o += t.samples[i].length;
    }
    const mvhd = new Fields()
      .u32(0)
      .u32(0)
      .u32(MOVIE_TIMESCALE)
      .u32(movieDuration)
      .u32(0x00010000) // rate 1.0
      .u16(0x0100) // volume 1.0
      .u16(0)
      .u32(0)
      .u32(0);
    for (const m of MATRIX) mvhd.u32(m);
    for (let i = 0; i < 6; i++) mvhd.u32(0);
    mvhd.u32(tracks.length + 1);
    return box("moov", fullBox("mvhd", 0, 0, mvhd.done()), ...tracks.map((t, i) => writeTrak(t, offsets[i])));
  };
  // The moov size does not depend on the offsets' values: build once to measure, once for real.
  const moovSize = buildMoov(0).length;
  const moov = buildMoov(ftyp.length + moovSize + 8);

  const out = new Uint8Array(ftyp.length + moov.length + mdatSize);
  out.set(ftyp, 0);
  out.set(moov, ftyp.length);
  let o = ftyp.length + moov.length;
  new DataView(out.buffer).setUint32(o, mdatSize);
  out.set([0x6d, 0x64, 0x61, 0x74], o + 4); // "mdat"
  o += 8;
  for (const c of layout) {
    const t = tracks[c.track];
    for (let i = c.first; i < c.first + c.count; i++) {
      out.set(t.samples[i], o);
      o += t.samples[i].length;
    }
  }
  return out;
}
