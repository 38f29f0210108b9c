/**
 * Freezing of static tables (the model catalog, an adapter's model table) so that no caller can change
 * a price, a limit or an endpoint at run time.
 */

/**
 * Freezes `value` and every object under it (arrays and records, depth first; objects already frozen are
 * left as they are, with what is under them) and returns it. Other values are returned unchanged.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
