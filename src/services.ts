/**
 * Everything a running gateway holds: configuration, database, upstream adapters. Built once by
 * `main.ts` (or by a test) and handed to the HTTP app and the runner; nothing reads globals.
 */
import { VoiceLibrary } from "./audio/voice-library.ts";
import type { SpeechModel } from "./catalog/types.ts";
import type { Config } from "./config.ts";
import { type Db, migrate, openDatabase } from "./storage/db.ts";
import { createSimulatedAudioUpstream } from "./upstreams/simulator/speech.ts";
import { SimulatedVoiceCreation } from "./upstreams/simulator/voice-creation.ts";
import type { MusicAdapter, SpeechAdapter, VoiceCreationAdapter, VoiceLibraryAdapter } from "./upstreams/types.ts";
import { type BlobStore, openBlobStore } from "./storage/blobs.ts";
import { createSimulatedMediaUpstream } from "./upstreams/simulator/media.ts";

export interface Services {
  config: Config;
  db: Db;
  /** The adapter serving a speech model (by family; the simulator unless a real upstream is configured). */
  speechAdapterFor(model: SpeechModel): SpeechAdapter;
  /** The voice library of both audio providers (membership tests; raw lists). */
  voices: VoiceLibraryAdapter;
  /** The cached voice library served by `GET /v1/audio/voices`. */
  voiceLibrary: VoiceLibrary;
  /** A short MP3 sample of an alpha library voice, or null when the id is not an alpha voice. */
  voicePreview(voiceId: string, signal?: AbortSignal): Promise<Uint8Array | null>;
  /** Music and sound effects. */
  media: MusicAdapter;
  /** Blob storage of generated outputs (`STORAGE_URL`). */
  blobs: BlobStore;
  /** Voice design and cloning (beta provider). */
  voiceCreation: VoiceCreationAdapter;
  /** Releases connections and workers. */
  close(): Promise<void>;
}

/** Opens the database, applies migrations and creates the upstream adapters. */
export async function createServices(config: Config): Promise<Services> {
  const db = openDatabase(config.databaseUrl);
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  const blobs = openBlobStore(config.storageUrl);
  const media = createSimulatedMediaUpstream({ latencyScale: config.simLatencyScale });
  const simulator = createSimulatedAudioUpstream({
    latencyScale: config.simLatencyScale,
    publicBaseUrl: config.publicBaseUrl,
  });
  return {
    config,
    db,
    speechAdapterFor: () => simulator,
    voices: simulator,
    voiceLibrary: new VoiceLibrary(simulator),
    voicePreview: async (voiceId, signal) => (simulator.isAlphaVoice(voiceId) ? simulator.voicePreview(voiceId, signal) : null),
    voiceCreation: new SimulatedVoiceCreation(config.simLatencyScale),
    media,
    blobs,
    async close() {
      await simulator.close();
      await media.close();
      await db.close();
    },
  };
}
