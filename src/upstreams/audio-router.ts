/**
 * Which source serves a synchronous audio call (D25, D27): the configured sources of the call's family in
 * file order, with failover under the caller's one hold ({@link runOnSources}), or the built-in simulator
 * when the family has no source that offers the capability (D10, D25).
 *
 * Families: `alpha` (elevenlabs: speech, music, sound effects, voice library), `beta` (minimax: speech,
 * music, voice design and cloning, voice library), `transcribe` and `understand` (openai). Designed and
 * cloned voices are pinned to the source that made them: speech with such a voice tries that source only,
 * and a voice whose source is no longer configured is unavailable (410 `voice_unavailable`, D27).
 *
 * Test-mode calls (D32) go through {@link AudioRouter.testMode}: the same router with its simulator-only
 * flag set, which serves every capability with the simulator whatever `UPSTREAMS` configures.
 */
import type { UpstreamRegistry } from "./registry.ts";
import { firstChunkThen } from "./first-chunk.ts";
import { runOnSources, type Served, type SyncSlot } from "./sync-failover.ts";
import type { SpeechStreamRequest, SpeechStreamSource, TranscriptionEvent, TranscriptionStreamRequest, TranscriptionStreamSource } from "./realtime.ts";
import { FailoverSpeechStream, openTranscriptionOnSources, type ServedTranscription } from "./realtime-failover.ts";
import {
  type AudioBytes,
  type AudioResult,
  type AudioTextAdapter,
  type AudioTextRequest,
  type MusicAdapter,
  type MusicRequest,
  type MusicSource,
  type NamedSource,
  type SfxRequest,
  type SfxSource,
  type SimulateMode,
  type SpeechAdapter,
  type SpeechRequest,
  UpstreamError,
  type VoiceCloneRequest,
  type VoiceCreationAdapter,
  type VoiceDesignRequest,
  type VoiceLibraryAdapter,
  type VoiceListSource,
  type VoiceRecord,
} from "./types.ts";

/**
 * A real audio source built from one `UPSTREAMS` entry: the capabilities its protocol has (elevenlabs:
 * speech, music, sfx, voices, realtime speech and transcription; minimax: speech, music, design, clone,
 * voices, realtime speech; openai: transcribe, understand). A capability it lacks is absent.
 */
export type RealAudioSource = NamedSource &
  Partial<SpeechAdapter & MusicSource & SfxSource & VoiceCreationAdapter & VoiceListSource & AudioTextAdapter & SpeechStreamSource & TranscriptionStreamSource>;

/** The simulator's audio adapters (D10): what serves a family without a real source. */
export interface SimulatedAudio {
  speech: SpeechAdapter;
  media: MusicAdapter;
  voiceCreation: VoiceCreationAdapter;
  voices: VoiceLibraryAdapter;
  audioText: AudioTextAdapter;
  /** Realtime speech (D42): audio follows the text as it arrives. */
  speechStream: SpeechStreamSource;
  /** Realtime transcription (D43): its own speech comes back as the text it spoke; silence gives nothing. */
  transcriptionStream: TranscriptionStreamSource;
}

/** The catalog's voice design and cloning models (one each): what their upstream spans name (D40). */
const VOICE_DESIGN_MODEL = "beta-voice-design";
const VOICE_CLONE_MODEL = "beta-voice-clone";

/** The audio families of D25 that synchronous calls draw from. */
export type AudioFamily = "alpha" | "beta" | "transcribe" | "understand";

/** Where a designed or cloned voice lives: a source's name, or null for the simulator. */
export type VoiceHome = string | null;

/** Routes every synchronous audio call of the gateway to its sources (see the module comment). */
export class AudioRouter {
  readonly #registry: UpstreamRegistry;
  readonly #sim: SimulatedAudio;
  readonly #sources: ReadonlyMap<string, RealAudioSource>;
  /** Test mode (D32): every call is the simulator's, real sources are never called. */
  readonly #simulatorOnly: boolean;
  #testMode: AudioRouter | null = null;

  /**
   * `sources`: the real audio sources by name (each a source of `registry`); the registry gives the
   * families and their order. `simulatorOnly` makes the router of test-mode calls (D32).
   */
  constructor(
    registry: UpstreamRegistry,
    simulated: SimulatedAudio,
    sources: ReadonlyMap<string, RealAudioSource>,
    opts: { simulatorOnly?: boolean } = {},
  ) {
    this.#registry = registry;
    this.#sim = simulated;
    this.#sources = sources;
    this.#simulatorOnly = opts.simulatorOnly ?? false;
  }

  /**
   * The router of test-mode calls (D32): the same simulator, never a real source (an owned voice made on
   * a real source is spoken by the simulator too). It shares this router's adapters; close this one only.
   */
  get testMode(): AudioRouter {
    if (this.#simulatorOnly) return this;
    this.#testMode ??= new AudioRouter(this.#registry, this.#sim, this.#sources, { simulatorOnly: true });
    return this.#testMode;
  }

  /**
   * The slots of `family` that have a capability (`pick` returns it bound, or undefined), in
   * configuration order; the simulator's (`sim`) when there is none.
   */
  #plan<F>(family: AudioFamily, pick: (s: RealAudioSource) => F | undefined, sim: F): SyncSlot<F>[] {
    if (this.#simulatorOnly) return [{ name: null, state: null, adapter: sim }];
    const slots: SyncSlot<F>[] = [];
    for (const state of this.#registry.sourcesFor(family)) {
      const source = this.#sources.get(state.name);
      const fn = source === undefined ? undefined : pick(source);
      if (fn !== undefined) slots.push({ name: state.name, state, adapter: fn });
    }
    return slots.length > 0 ? slots : [{ name: null, state: null, adapter: sim }];
  }

  /** True when `family` has a real source with the capability `pick` names (else the simulator serves it). */
  #isReal(family: AudioFamily, pick: (s: RealAudioSource) => unknown): boolean {
    return this.#registry.sourcesFor(family).some((state) => {
      const source = this.#sources.get(state.name);
      return source !== undefined && pick(source) !== undefined;
    });
  }

  /**
   * Speech of `family` (`alpha` or `beta`). `home`: undefined for a library or system voice (every
   * source of the family, with failover); a source name or null (the simulator) for an owned voice, which
   * is served there only. A stream is returned once its first chunk arrived (a failure before it fails
   * over, D27); it keeps its source's concurrency place until its end.
   * @throws UpstreamError (`voiceUnavailable` when the voice's source is no longer configured), AppError 429.
   */
  async speech(family: "alpha" | "beta", req: SpeechRequest, home: VoiceHome | undefined, signal?: AbortSignal): Promise<Served<AudioResult>> {
    type Speak = SpeechAdapter["speech"];
    const sim: Speak = (r, s) => this.#sim.speech.speech(r, s);
    let slots: SyncSlot<Speak>[];
    if (home === undefined) {
      slots = this.#plan(family, (s) => s.speech?.bind(s), sim);
    } else if (home === null || this.#simulatorOnly) {
      slots = [{ name: null, state: null, adapter: sim }];
    } else {
      const state = this.#registry.get(home);
      const source = this.#sources.get(home);
      if (state === undefined || source?.speech === undefined) {
        throw new UpstreamError(`the voice's source ${home} is no longer configured`, false, { voiceUnavailable: true });
      }
      slots = [{ name: home, state, adapter: source.speech.bind(source) }];
    }
    return runOnSources(
      this.#registry,
      slots,
      async (speak, ctx) => {
        const out = await speak(req, signal);
        if (out.kind === "bytes") return out;
        const release = ctx.keepSlot();
        return { ...out, chunks: await firstChunkThen(out.chunks, release, "speech") };
      },
      signal,
      { operation: "text_to_speech", model: req.model, content: () => req.text },
    );
  }

  /**
   * A realtime speech stream of `family` (D42), opened at its first chunk on the family's sources with
   * failover before the first audio of a chunk (realtime-failover.ts), or on the simulator when the family
   * has no source with sockets. `home` pins an owned voice as {@link AudioRouter.speech} does.
   * @throws UpstreamError (`voiceUnavailable`) when the voice's source is no longer configured.
   */
  speechStream(family: "alpha" | "beta", req: SpeechStreamRequest, home: VoiceHome | undefined): FailoverSpeechStream {
    type Open = SpeechStreamSource;
    const sim: Open = this.#sim.speechStream;
    let slots: SyncSlot<Open>[];
    if (home === undefined) {
      slots = this.#plan(family, (s) => (s.openSpeechStream === undefined ? undefined : { openSpeechStream: s.openSpeechStream.bind(s) }), sim);
    } else if (home === null || this.#simulatorOnly) {
      slots = [{ name: null, state: null, adapter: sim }];
    } else {
      const state = this.#registry.get(home);
      const source = this.#sources.get(home);
      if (state === undefined || source?.openSpeechStream === undefined) {
        throw new UpstreamError(`the voice's source ${home} is no longer configured`, false, { voiceUnavailable: true });
      }
      slots = [{ name: home, state, adapter: { openSpeechStream: source.openSpeechStream.bind(source) } }];
    }
    return new FailoverSpeechStream(this.#registry, slots, req);
  }

  /**
   * Whether realtime transcription (D43) has a server: the simulator when the `transcribe` family has no
   * source at all (D25), else a source of the family with a socket (an `elevenlabs` one). A family served
   * only by sources without one (OpenAI's HTTP transcription) has none: its sockets are refused, never
   * answered by the simulator in their place.
   */
  get realtimeTranscription(): boolean {
    if (this.#simulatorOnly || this.#registry.sourcesFor("transcribe").length === 0) return true;
    return this.#isReal("transcribe", (s) => s.openTranscriptionStream);
  }

  /**
   * Opens a realtime transcription stream (D43) on the `transcribe` family's sources with sockets, with
   * failover at opening, or on the simulator. Its events go to `onEvent`.
   * @throws UpstreamError, AppError 429 (every source at its cap).
   */
  transcriptionStream(req: TranscriptionStreamRequest, onEvent: (event: TranscriptionEvent) => void, signal?: AbortSignal): Promise<ServedTranscription> {
    type Open = TranscriptionStreamSource;
    const slots = this.#plan<Open>(
      "transcribe",
      (s) => (s.openTranscriptionStream === undefined ? undefined : { openTranscriptionStream: s.openTranscriptionStream.bind(s) }),
      this.#sim.transcriptionStream,
    );
    return openTranscriptionOnSources(this.#registry, slots, req, onEvent, signal);
  }

  /** Music of `family` (`alpha-music` on alpha, beta models on beta). @throws UpstreamError, AppError 429. */
  async music(family: "alpha" | "beta", req: MusicRequest, signal?: AbortSignal): Promise<Served<AudioBytes>> {
    const slots = this.#plan(family, (s) => s.music?.bind(s), (r: MusicRequest, sg?: AbortSignal) => this.#sim.media.music(r, sg));
    return runOnSources(this.#registry, slots, (music) => music(req, signal), signal, {
      operation: "generate_music",
      model: req.model,
      content: () => JSON.stringify({ prompt: req.prompt, lyrics: req.lyrics }),
    });
  }

  /** Sound effects (alpha). @throws UpstreamError, AppError 429. */
  async sfx(family: "alpha", req: SfxRequest, signal?: AbortSignal): Promise<Served<AudioBytes>> {
    const slots = this.#plan(family, (s) => s.sfx?.bind(s), (r: SfxRequest, sg?: AbortSignal) => this.#sim.media.sfx(r, sg));
    return runOnSources(this.#registry, slots, (sfx) => sfx(req, signal), signal, { operation: "generate_sound_effect", model: req.model, content: () => req.prompt });
  }

  /** Voice design (beta). `source` of the answer is where the voice now lives. @throws UpstreamError, AppError 429. */
  async designVoice(req: VoiceDesignRequest, signal?: AbortSignal): Promise<Served<{ upstreamVoiceId: string }>> {
    const slots = this.#plan("beta", (s) => s.designVoice?.bind(s), (r: VoiceDesignRequest, sg?: AbortSignal) => this.#sim.voiceCreation.designVoice(r, sg));
    return runOnSources(this.#registry, slots, (design) => design(req, signal), signal, { operation: "design_voice", model: VOICE_DESIGN_MODEL, content: () => req.description });
  }

  /** Voice cloning (beta). `source` of the answer is where the voice now lives. @throws UpstreamError, AppError 429. */
  async cloneVoice(req: VoiceCloneRequest, signal?: AbortSignal): Promise<Served<{ upstreamVoiceId: string }>> {
    const slots = this.#plan("beta", (s) => s.cloneVoice?.bind(s), (r: VoiceCloneRequest, sg?: AbortSignal) => this.#sim.voiceCreation.cloneVoice(r, sg));
    return runOnSources(this.#registry, slots, (clone) => clone(req, signal), signal, { operation: "clone_voice", model: VOICE_CLONE_MODEL });
  }

  /** Transcription (`transcribe` family, pool host_1). @throws UpstreamError, AppError 429. */
  async transcribe(req: AudioTextRequest, signal?: AbortSignal): Promise<Served<{ text: string }>> {
    const slots = this.#plan("transcribe", (s) => s.transcribe?.bind(s), (r: AudioTextRequest, sg?: AbortSignal) => this.#sim.audioText.transcribe(r, sg));
    return runOnSources(this.#registry, slots, (run) => run(req, signal), signal, { operation: "transcribe", model: req.model });
  }

  /** Audio understanding (`understand` family, pool host_2). @throws UpstreamError, AppError 429. */
  async understand(req: AudioTextRequest, signal?: AbortSignal): Promise<Served<{ text: string }>> {
    const slots = this.#plan("understand", (s) => s.understand?.bind(s), (r: AudioTextRequest, sg?: AbortSignal) => this.#sim.audioText.understand(r, sg));
    return runOnSources(this.#registry, slots, (run) => run(req, signal), signal, { operation: "understand_audio", model: req.model, content: () => req.prompt ?? "" });
  }

  /**
   * The voice library of `provider` as a {@link VoiceLibraryAdapter} (what the 5-minute cache of
   * `GET /v1/audio/voices` reads): the family's sources with failover, else the simulator's catalog.
   * `isAlphaVoice` answers null when the alpha catalog is a real source's (only the cached list knows);
   * `sourcesOf` names the sources a catalog comes from (for answers about an unknown voice).
   */
  readonly library: VoiceLibraryAdapter & { sourcesOf(provider: "alpha" | "beta"): { name: string; protocol: string }[] } = {
    listVoices: async (provider: "alpha" | "beta", simulate?: SimulateMode | null): Promise<VoiceRecord[]> => {
      if (!this.#isReal(provider, (s) => s.listVoices)) return this.#sim.voices.listVoices(provider, simulate);
      const slots = this.#plan(provider, (s) => s.listVoices?.bind(s), () => this.#sim.voices.listVoices(provider, simulate));
      return (await runOnSources(this.#registry, slots, (list) => list())).value;
    },
    isAlphaVoice: (voiceId: string): boolean | null =>
      this.#isReal("alpha", (s) => s.listVoices) ? null : this.#sim.voices.isAlphaVoice(voiceId),
    /**
     * The configured sources `provider`'s catalog comes from (name and protocol, in configuration order;
     * never a key or URL); empty when the simulator's catalog is served (D10).
     */
    sourcesOf: (provider: "alpha" | "beta"): { name: string; protocol: string }[] =>
      this.#registry
        .sourcesFor(provider)
        .filter((state) => this.#sources.get(state.name)?.listVoices !== undefined)
        .map((state) => ({ name: state.name, protocol: state.source.protocol })),
  };

  /** True when the simulator's alpha catalog is the one served (its previews are the gateway's own). */
  get simulatedAlphaLibrary(): boolean {
    return !this.#isReal("alpha", (s) => s.listVoices);
  }

  /** Closes every real source's connections (the {@link AudioRouter.testMode} view shares them: close this one). */
  async close(): Promise<void> {
    if (this.#simulatorOnly) return;
    for (const source of this.#sources.values()) await source.close();
  }
}
