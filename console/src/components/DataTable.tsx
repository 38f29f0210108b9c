/**
 * A table of rows with declared columns. On a narrow screen (under 600 px) each row becomes a card of
 * "header: value" lines (styles.css `.stack`), so a phone needs no sideways scrolling; with `stack={false}`
 * the table keeps its columns and scrolls inside its own box instead (the page never scrolls sideways).
 * And `Pager`, the newer/older buttons of a cursor-paged
 * list (url-state.ts `useCursor`).
 */
import type { ReactNode } from "react";

/** One column: its header and how a row fills its cell. `numeric` aligns right (amounts, counts). */
export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
  numeric?: boolean;
}

export function DataTable<T>({
  columns,
  rows,
  rowKey,
  caption,
  stack = true,
}: {
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  caption?: string;
  stack?: boolean;
}) {
  return (
    <div className={`overflow-auto table-box${stack ? " stack" : ""}`}>
      <table className="striped">
        {caption && <caption>{caption}</caption>}
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.header} scope="col" className={c.numeric ? "numeric" : undefined}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((c) => (
                <td key={c.header} className={c.numeric ? "numeric" : undefined} data-label={c.header}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The paging controls of a cursor-paged list. `onNext` opens the page after the last row shown. */
export function Pager({ hasPrevious, hasMore, onPrevious, onNext, onFirst }: { hasPrevious: boolean; hasMore: boolean; onPrevious: () => void; onNext: () => void; onFirst: () => void }) {
  if (!hasPrevious && !hasMore) return null;
  return (
    <nav aria-label="Pages" className="pager">
      <button type="button" className="secondary outline" onClick={onFirst} disabled={!hasPrevious}>
        First page
      </button>
      <button type="button" className="secondary outline" onClick={onPrevious} disabled={!hasPrevious}>
        Previous page
      </button>
      <button type="button" className="secondary" onClick={onNext} disabled={!hasMore}>
        Next page
      </button>
    </nav>
  );
}

/** The cursor of a list page, as {@link useCursor} (components/url-state.ts) returns it. */
export interface ListCursor {
  hasPrevious: boolean;
  first: () => void;
  previous: () => void;
  next: (lastId: string) => void;
}

/**
 * {@link Pager} for a cursor-paged list (`limit`/`after`, `has_more`): `lastId` is the cursor of the page's
 * last row (its `id`, or `user_id`, `job_id`... whatever the list pages by); Next opens the page after it.
 */
export function CursorPager({ cursor, hasMore, lastId }: { cursor: ListCursor; hasMore: boolean; lastId: string | undefined }) {
  return (
    <Pager
      hasPrevious={cursor.hasPrevious}
      hasMore={hasMore && lastId !== undefined}
      onFirst={cursor.first}
      onPrevious={cursor.previous}
      onNext={() => {
        if (lastId !== undefined) cursor.next(lastId);
      }}
    />
  );
}
