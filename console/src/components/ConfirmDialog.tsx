/**
 * A modal confirmation on the native `<dialog>` (focus kept inside, Escape cancels, Pico styles it): for
 * actions that cannot be undone, such as revoking a key.
 */
import { useEffect, useId, useRef, type ReactNode } from "react";

export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  cancelLabel = "Cancel",
  busy = false,
  onConfirm,
  onCancel,
}: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  /** The dismissing button's label; change it when the action itself is a "cancel" (of a job...). */
  cancelLabel?: string;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby={`${id}-title`} onCancel={(e) => (e.preventDefault(), onCancel())}>
      <article>
        <h2 id={`${id}-title`}>{title}</h2>
        {children}
        <footer>
          <button type="button" className="secondary" onClick={onCancel} disabled={busy}>
            {cancelLabel}
          </button>
          <button type="button" className="danger" onClick={onConfirm} aria-busy={busy} disabled={busy}>
            {confirmLabel}
          </button>
        </footer>
      </article>
    </dialog>
  );
}
