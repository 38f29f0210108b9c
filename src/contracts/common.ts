/**
 * Fields several request contracts share: pass-through parameters, idempotency keys, https URLs, and the
 * model lists of the enabled catalog models.
 */
import type { TString } from "typebox";
import { enabledModels } from "../catalog/models.ts";
import { obj, str } from "./schema.ts";

/** Ids of the enabled catalog models with one of `caps` (the catalog is static: read once at startup). */
export const modelsWith = (...caps: string[]): string[] => enabledModels().filter((m) => caps.includes(m.capability)).map((m) => m.id);

export const IDEMPOTENCY = str("Replaying the same key returns the same job without a new charge (200 instead of 202).", { maxLength: 128 });
export const PARAMETERS = obj({}, [], { description: "Model-specific pass-through parameters (for example a seed or aspect ratio), forwarded unchanged.", additionalProperties: true });
export const HTTPS_URL = (description: string): TString => str(description, { format: "uri", pattern: "^https://" });
