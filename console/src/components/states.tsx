/**
 * Loading, error and empty states, and `QueryView`, which picks the right one for a TanStack Query result
 * so every page shows them the same way.
 */
import type { UseQueryResult } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { errorMessage, GatewayError } from "../api.ts";

/** A busy indicator, announced to screen readers. */
export function Loading({ label = "Loading…" }: { label?: string }) {
  return (
    <p aria-busy="true" role="status">
      {label}
    </p>
  );
}

/** An error notice (role `alert`), with a retry button when `retry` is given. */
export function ErrorNotice({ error, retry }: { error: unknown; retry?: () => void }) {
  const requestId = error instanceof GatewayError ? error.requestId : null;
  return (
    <div role="alert" className="notice error">
      <p>{errorMessage(error)}</p>
      {requestId && <small>Request id: {requestId}</small>}
      {retry && (
        <p>
          <button type="button" className="secondary" onClick={retry}>
            Try again
          </button>
        </p>
      )}
    </div>
  );
}

/** What an empty list says: a sentence, or a block with its next step (see {@link EmptyState}). */
export function Empty({ children }: { children: ReactNode }) {
  if (typeof children === "string") return <p className="empty">{children}</p>;
  return <div className="empty">{children}</div>;
}

/**
 * An empty state that offers the next step: what is missing (`title`, a sentence), why or how it fills
 * (`children`), the actions (links or buttons, the first one primary), and `after` them another way (an
 * example call).
 */
export function EmptyState({ title, children, actions, after }: { title: string; children?: ReactNode; actions?: ReactNode; after?: ReactNode }) {
  return (
    <div className="empty-state">
      <p className="empty-title">{title}</p>
      {children}
      {actions && <p className="empty-actions">{actions}</p>}
      {after}
    </div>
  );
}

/**
 * The loading, error or empty state of `query`, or `children(data)` once it has data. `isEmpty` decides
 * when `empty` shows instead.
 */
export function QueryView<T>({
  query,
  children,
  isEmpty,
  empty,
  loadingLabel,
}: {
  query: UseQueryResult<T>;
  children: (data: T) => ReactNode;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  loadingLabel?: string;
}) {
  if (query.isPending) return <Loading label={loadingLabel} />;
  if (query.isError) return <ErrorNotice error={query.error} retry={() => void query.refetch()} />;
  if (isEmpty?.(query.data)) return <Empty>{empty ?? "Nothing here yet."}</Empty>;
  return <>{children(query.data)}</>;
}
