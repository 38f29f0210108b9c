/**
 * Read-only figures about money in flight, for monitoring (the `/metrics` gauges of holds); the queries
 * are stats.repository.ts's.
 */
export { openHoldTotals } from "./stats.repository.ts";
