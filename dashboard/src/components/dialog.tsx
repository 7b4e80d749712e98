/** A confirmation before an action that cannot be undone. */

import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

/**
 * A modal that runs `onConfirm` only after the user confirms. With `typeToConfirm`, the confirm
 * button stays disabled until that text is typed (for deleting whole queues).
 */
export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  typeToConfirm?: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState("");
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const ready = props.typeToConfirm === undefined || typed === props.typeToConfirm;
  return (
    <dialog ref={dialog} class="dialog" onCancel={props.onCancel} data-testid="confirm-dialog">
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (ready) props.onConfirm();
        }}
      >
        <h3>{props.title}</h3>
        <div class="dialog-body">{props.children}</div>
        {props.typeToConfirm !== undefined && (
          <label class="field">
            <span>
              Type <code>{props.typeToConfirm}</code> to confirm
            </span>
            <input
              value={typed}
              onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
              autoFocus
              aria-label="Confirmation"
            />
          </label>
        )}
        <div class="dialog-actions">
          <button type="button" class="button" onClick={props.onCancel}>
            Cancel
          </button>
          <button type="submit" class={`button ${props.danger ? "danger" : "primary"}`} disabled={!ready}>
            {props.confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}
