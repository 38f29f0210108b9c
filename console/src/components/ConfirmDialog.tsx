/**
 * A modal confirmation on the native `<dialog>` (focus kept inside, Escape cancels, Pico styles it): for
 * actions that cannot be undone, such as revoking a key.
 */
import { type RefObject, useEffect, useId, useRef, type ReactNode } from "react";

/**
 * The ref of a native `<dialog>` shown as a modal while `open` is true and closed otherwise (every modal
 * of the console: this confirmation, the key and organization creation forms).
 */
export function useModalDialog(open: boolean): RefObject<HTMLDialogElement | null> {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return ref;
}

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
  const ref = useModalDialog(open);
  const id = useId();
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
