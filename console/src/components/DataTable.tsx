/**
 * A table of rows with declared columns, scrolling sideways inside its own box on a narrow screen (the
 * page itself never scrolls sideways at 375 px), and `Pager`, the newer/older buttons of a cursor-paged
 * list (url-state.ts `useCursor`).
 */
import type { ReactNode } from "react";

/** One column: its header and how a row fills its cell. `numeric` aligns right (amounts, counts). */
export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
  numeric?: boolean;
}

export function DataTable<T>({ columns, rows, rowKey, caption }: { columns: Column<T>[]; rows: T[]; rowKey: (row: T) => string; caption?: string }) {
  return (
    <div className="overflow-auto table-box">
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
                <td key={c.header} className={c.numeric ? "numeric" : undefined}>
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
