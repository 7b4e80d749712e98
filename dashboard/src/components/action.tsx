/** Buttons that change state on the broker, with their outcome shown next to them. */

import type { ComponentChildren } from "preact";
import { useDenied, type Action, type ActionLevel } from "../hooks";
import { ErrorBox } from "./ui";

/** A button for an action of `level`; disabled while it runs or once the broker refused the level. */
export function ActionButton(props: {
  level: ActionLevel;
  action?: Action;
  onClick: () => void;
  children: ComponentChildren;
  tone?: "primary" | "danger";
  small?: boolean;
  disabled?: boolean;
  testId?: string;
}) {
  const denied = useDenied(props.level);
  return (
    <button
      type="button"
      class={`button ${props.tone ?? ""} ${props.small ? "small" : ""}`}
      disabled={denied || props.disabled || props.action?.busy}
      title={denied ? "Insufficient permissions" : undefined}
      onClick={props.onClick}
      data-testid={props.testId}
    >
      {props.action?.busy ? "Working…" : props.children}
    </button>
  );
}

/** What the last run of an action said: its success message or its failure. */
export function ActionResult(props: { action: Action }) {
  const { action } = props;
  if (action.error) return <ErrorBox error={action.error} compact />;
  if (action.done)
    return (
      <div class="notice success" role="status" data-testid="action-done">
        {action.done}
      </div>
    );
  return null;
}
