import { useEffect, useRef, type ReactNode } from "react";

// Confirm asks before something that cannot be undone, in a modal <dialog>
// (focus stays inside; Escape cancels).
export function Confirm(props: {
  open: boolean;
  title: string;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={props.onCancel} className="confirm">
      <h2 id="confirm-title">{props.title}</h2>
      {props.children}
      <div className="actions">
        <button type="button" onClick={props.onCancel} autoFocus>Keep</button>
        <button type="button" className={props.danger ? "danger" : "primary"} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
