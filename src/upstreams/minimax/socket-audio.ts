/**
 * The audio of one text of MiniMax's T2A WebSocket (speech-socket.ts), turned into the gateway format so
 * that the pieces of every text of a stream, one after the other, form one valid stream of it (D42, D26).
 *
 * MiniMax answers each `task_continue` with audio of its own: for MP3, a separate encoding per text (which
 * may carry an ID3 tag, a Xing/Info frame or an ID3v1 trailer as an MP3 file does: whether MiniMax writes
 * them is *unverified*, so they are removed whatever it does), cut into messages at any byte. So:
 * - MP3 MiniMax has (`mp3_44100_128`, `mp3_22050_32`): only whole audio frames are passed on
 *   ({@link Mp3FrameFilter}); concatenated MP3 frames of separate encodings decode as one stream (the first
 *   frame of an encoding uses no bit reservoir);
 * - raw PCM at a rate MiniMax has: passed on in whole 16-bit samples;
 * - a format MiniMax lacks (`mp3_44100_192`, `ulaw_8000`, models.ts `audioPlan`): its PCM is transcoded
 *   with one encoder per text ({@link PcmStreamEncoder}), flushed at the text's end so the text's audio is
 *   complete when its last piece is yielded.
 */
import { PcmStreamEncoder } from "../audio-convert.ts";
import { findMp3Frame, id3v2LengthAt, mp3FrameAt } from "../mp3-frames.ts";
import type { Mp3Frame } from "../mp3-frames.ts";
import type { AudioFormat } from "../types.ts";
import { audioFormatInfo } from "../audio-convert.ts";
import { concatBytes } from "../util.ts";
import type { AudioPlan } from "./models.ts";

/** The audio of one text in the gateway format: {@link push} each decoded message, then {@link end} once. */
export interface TextAudio {
  /**
   * The gateway-format bytes of `raw` (possibly empty while an MP3 frame or a sample is incomplete).
   * @throws MalformedAudioError when the bytes are not what was asked (MP3 of another sample rate).
   */
  push(raw: Uint8Array): Uint8Array;
  /** The last bytes of the text (the encoder's flush); an incomplete trailing frame or sample is dropped. */
  end(): Uint8Array;
}

/** MiniMax's audio is not what the task asked for; speech-socket.ts makes it a retryable malformed answer. */
export class MalformedAudioError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MalformedAudioError";
  }
}

/** The {@link TextAudio} of one text of a stream of `format` asked of MiniMax as `plan` says (models.ts). */
export function textAudio(format: AudioFormat, plan: AudioPlan): TextAudio {
  if (plan.pcmRate !== null) {
    const encoder = new PcmStreamEncoder(format, plan.pcmRate);
    return { push: (raw) => encoder.push(raw), end: () => encoder.end() };
  }
  if (plan.setting.format === "mp3") return new Mp3FrameFilter(audioFormatInfo(format).sampleRate);
  return new WholeSamples();
}

/** Raw 16-bit PCM in whole samples: an odd byte waits for the next message; one left at the end is dropped. */
class WholeSamples implements TextAudio {
  #carry: Uint8Array = new Uint8Array(0);

  push(raw: Uint8Array): Uint8Array {
    const joined = this.#carry.length === 0 ? raw : concatBytes([this.#carry, raw]);
    const even = joined.length & ~1;
    this.#carry = joined.slice(even);
    return joined.subarray(0, even);
  }

  end(): Uint8Array {
    this.#carry = new Uint8Array(0);
    return new Uint8Array(0);
  }
}

const ID3 = [0x49, 0x44, 0x33];
const TAG = [0x54, 0x41, 0x47];
/** Length of an ID3v1 tag (`TAG` + 125 bytes). */
const ID3V1_LENGTH = 128;

function startsWith(b: Uint8Array, at: number, sig: readonly number[]): boolean {
  for (let i = 0; i < sig.length; i++) if (b[at + i] !== sig[i]) return false;
  return true;
}

/** True for a Xing/Info (LAME) or VBRI header frame: metadata, not audio. */
function isTagFrame(b: Uint8Array, f: Mp3Frame): boolean {
  const at = f.offset + 4 + f.sideInfoLength;
  const word = String.fromCharCode(b[at] ?? 0, b[at + 1] ?? 0, b[at + 2] ?? 0, b[at + 3] ?? 0);
  if (word === "Xing" || word === "Info") return true;
  const v = f.offset + 4 + 32;
  return String.fromCharCode(b[v] ?? 0, b[v + 1] ?? 0, b[v + 2] ?? 0, b[v + 3] ?? 0) === "VBRI";
}

/**
 * MPEG audio Layer III bytes arriving cut anywhere, passed on as whole audio frames only: ID3v2 tags,
 * ID3v1 trailers and Xing/Info/VBRI header frames are dropped, bytes that are none of these are skipped
 * up to the next frame header, and a frame is passed on once all its bytes arrived. Every frame must have
 * `sampleRate` (the format asked for).
 */
export class Mp3FrameFilter implements TextAudio {
  readonly #sampleRate: number;
  #buf: Uint8Array = new Uint8Array(0);

  constructor(sampleRate: number) {
    this.#sampleRate = sampleRate;
  }

  push(raw: Uint8Array): Uint8Array {
    const b = this.#buf.length === 0 ? raw : concatBytes([this.#buf, raw]);
    const out: Uint8Array[] = [];
    let p = 0;
    while (p + 4 <= b.length) {
      if (startsWith(b, p, ID3)) {
        if (p + 10 > b.length) break;
        const len = id3v2LengthAt(b, p, "lenient");
        if (p + len > b.length) break;
        p += len;
        continue;
      }
      if (startsWith(b, p, TAG)) {
        if (p + ID3V1_LENGTH > b.length) break;
        p += ID3V1_LENGTH;
        continue;
      }
      const f = mp3FrameAt(b, p);
      if (f !== null) {
        if (p + f.length > b.length) break;
        if (!isTagFrame(b, f)) {
          if (f.sampleRate !== this.#sampleRate) throw new MalformedAudioError(`MP3 at ${f.sampleRate} Hz where ${this.#sampleRate} Hz was asked`);
          out.push(b.subarray(p, p + f.length));
        }
        p += f.length;
        continue;
      }
      // Not a frame, a tag or a trailer: skip to the next candidate (keeping a possible partial header).
      const next = nextCandidate(b, p + 1);
      if (next < 0) {
        p = Math.max(p + 1, b.length - 3);
        break;
      }
      p = next;
    }
    this.#buf = b.slice(p);
    return out.length === 1 ? out[0]!.slice() : concatBytes(out);
  }

  end(): Uint8Array {
    this.#buf = new Uint8Array(0);
    return new Uint8Array(0);
  }
}

/** The first offset at or after `from` where a frame header, an ID3v2 tag or an ID3v1 trailer starts, or -1. */
function nextCandidate(b: Uint8Array, from: number): number {
  const frame = findMp3Frame(b, from);
  for (let p = from; p + 3 <= b.length && (frame < 0 || p < frame); p++) {
    if (startsWith(b, p, ID3) || startsWith(b, p, TAG)) return p;
  }
  return frame;
}
