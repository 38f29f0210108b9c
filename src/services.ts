/**
 * Everything a running gateway holds: configuration, database, upstream adapters. Built once by
 * `main.ts` (or by a test) and handed to the HTTP app and the runner; nothing reads globals.
 */
import type { SpeechModel } from "./catalog/types.ts";
import type { Config } from "./config.ts";
import { type Db, migrate, openDatabase } from "./storage/db.ts";
import { createSimulatedAudioUpstream } from "./upstreams/simulator/speech.ts";
import type { SpeechAdapter, VoiceLibraryAdapter } from "./upstreams/types.ts";

export interface Services {
  config: Config;
  db: Db;
  /** The adapter serving a speech model (by family; the simulator unless a real upstream is configured). */
  speechAdapterFor(model: SpeechModel): SpeechAdapter;
  /** The voice library of both audio providers. */
  voices: VoiceLibraryAdapter;
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
  const simulator = createSimulatedAudioUpstream({
    latencyScale: config.simLatencyScale,
    publicBaseUrl: config.publicBaseUrl,
  });
  return {
    config,
    db,
    speechAdapterFor: () => simulator,
    voices: simulator,
    async close() {
      await simulator.close();
      await db.close();
    },
  };
}
