/**
 * Filters and the page cursor live in the URL query, so a filtered, paged list can be reloaded, bookmarked,
 * shared and walked back with the browser's Back button.
 */
import { useLocation, useNavigate, useSearchParams } from "react-router";

/**
 * The filters `defaults` names, read from the URL query (a missing one takes its default), and a setter
 * that writes a patch into the URL. An empty or default value is removed from the URL. Changing a filter
 * drops the page cursor (`after`): the first page of the new selection is shown.
 */
export function useUrlFilters<K extends string>(defaults: Record<K, string>): [Record<K, string>, (patch: Partial<Record<K, string>>) => void] {
  const [params, setParams] = useSearchParams();
  const values = { ...defaults };
  for (const k of Object.keys(defaults) as K[]) values[k] = params.get(k) ?? defaults[k];
  const set = (patch: Partial<Record<K, string>>) => {
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        for (const [k, v] of Object.entries(patch) as [K, string | undefined][]) {
          if (v === undefined || v === "" || v === defaults[k]) next.delete(k);
          else next.set(k, v);
        }
        next.delete("after");
        return next;
      },
      // Typing in a filter must not fill the history with one entry per key stroke.
      { replace: true },
    );
  };
  return [values, set];
}

/** Previous cursors of the pages before the current one, kept in the history entry's state. */
interface CursorState {
  cursors?: (string | null)[];
}

/**
 * The cursor (`after`) of a list paged as the API pages it (D30, D8: `?after=<id of the last row>`), kept in
 * the URL: `after` is the current cursor (null on the first page), `next(lastId)` opens the next page,
 * `previous()` the one before (the earlier cursors ride in the history state), `first()` the first page.
 */
export function useCursor(): { after: string | null; next: (lastId: string) => void; previous: () => void; first: () => void; hasPrevious: boolean } {
  const [params] = useSearchParams();
  const location = useLocation();
  const navigate = useNavigate();
  const after = params.get("after");
  const cursors = (location.state as CursorState | null)?.cursors ?? [];
  const go = (cursor: string | null, stack: (string | null)[]) => {
    const next = new URLSearchParams(params);
    if (cursor === null) next.delete("after");
    else next.set("after", cursor);
    const search = next.toString();
    void navigate({ pathname: location.pathname, search: search ? `?${search}` : "" }, { state: { cursors: stack } satisfies CursorState });
  };
  return {
    after,
    hasPrevious: after !== null,
    next: (lastId) => go(lastId, [...cursors, after]),
    // Opened from a bookmark, the earlier cursors are unknown: previous goes to the first page.
    previous: () => go(cursors.length > 0 ? cursors[cursors.length - 1] : null, cursors.slice(0, -1)),
    first: () => go(null, []),
  };
}
