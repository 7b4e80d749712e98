/** Small building blocks shared by every page: panels, states, badges, times, stats. */

import type { ComponentChildren } from "preact";
import type { Failure } from "../api";
import { absolute, relative } from "../format";
import { useNow, type Resource } from "../hooks";

/** A titled box of content; `actions` sit at the right of its title. */
export function Panel(props: {
  title?: ComponentChildren;
  actions?: ComponentChildren;
  children: ComponentChildren;
  class?: string;
  testId?: string;
}) {
  return (
    <section class={`panel ${props.class ?? ""}`} data-testid={props.testId}>
      {(props.title || props.actions) && (
        <header class="panel-head">
          <h2>{props.title}</h2>
          {props.actions && <div class="panel-actions">{props.actions}</div>}
        </header>
      )}
      <div class="panel-body">{props.children}</div>
    </section>
  );
}

/** A failed call: the broker's text and code, and a retry button when one is given. */
export function ErrorBox(props: { error: Failure; retry?: () => void; compact?: boolean }) {
  const { error } = props;
  return (
    <div class={`error-box ${props.compact ? "compact" : ""}`} role="alert" data-testid="error">
      <div class="error-text">
        <strong>{errorTitle(error)}</strong>
        <span class="error-message">{error.message}</span>
        <code class="error-code">{error.code}</code>
        {error.status !== null && <span class="error-status">HTTP {error.status}</span>}
      </div>
      {props.retry && (
        <button type="button" class="button small" onClick={props.retry}>
          Retry
        </button>
      )}
    </div>
  );
}

function errorTitle(error: Failure): string {
  if (error.status === null) return "Broker unreachable";
  if (error.status === 401) return "Authentication required";
  if (error.status === 403) return "Insufficient permissions";
  if (error.status === 404)
    return error.code === "route_not_found" ? "Not available on this broker" : "Not found";
  if (error.status >= 500) return "Broker error";
  return "Request failed";
}

/** Nothing to show: a quiet sentence in the place of the content. */
export function Empty(props: { children: ComponentChildren }) {
  return (
    <div class="empty" data-testid="empty">
      {props.children}
    </div>
  );
}

/** Placeholder lines of the size of the content that is on its way. */
export function Skeleton(props: { lines?: number }) {
  return (
    <div class="skeleton" aria-busy="true" aria-label="Loading">
      {Array.from({ length: props.lines ?? 3 }, (_, i) => (
        <div key={i} class="skeleton-line" />
      ))}
    </div>
  );
}

/**
 * The usual way to show a resource: a skeleton before the first answer, the failure when the
 * last call failed, otherwise `children(data)` (dimmed while a newer call runs).
 */
export function Loaded<T>(props: {
  resource: Resource<T>;
  lines?: number;
  children: (data: T) => ComponentChildren;
}) {
  const { resource } = props;
  if (resource.error) return <ErrorBox error={resource.error} retry={resource.reload} />;
  if (resource.data === undefined) return <Skeleton lines={props.lines} />;
  return <div class={resource.loading ? "stale" : ""}>{props.children(resource.data)}</div>;
}

/** A relative time (`5 min ago`) with the absolute one in its tooltip, or both side by side. */
export function Time(props: { value: string | null | undefined; full?: boolean }) {
  const now = useNow();
  if (!props.value) return <span class="muted">—</span>;
  const abs = absolute(props.value);
  return (
    <time dateTime={props.value} title={abs} class="time">
      {relative(props.value, now)}
      {props.full && <span class="muted absolute"> · {abs}</span>}
    </time>
  );
}

const STATUS_TONES: Record<string, string> = {
  pending: "blue",
  processing: "amber",
  completed: "green",
  dead_letter: "red",
  Stable: "green",
  Lagging: "amber",
  Dead: "gray",
  healthy: "green",
  unhealthy: "red",
};

/** A coloured label; known statuses get their colour by name. */
export function Badge(props: { children: ComponentChildren; tone?: string; title?: string }) {
  const tone = props.tone ?? (typeof props.children === "string" ? STATUS_TONES[props.children] : undefined);
  return (
    <span class={`badge ${tone ?? "gray"}`} title={props.title}>
      {typeof props.children === "string" ? props.children.replace("_", " ") : props.children}
    </span>
  );
}

/** One figure of a stat row: a label, a big value, and an optional hint below. */
export function Stat(props: {
  label: string;
  value: ComponentChildren;
  hint?: ComponentChildren;
  tone?: string;
}) {
  return (
    <div
      class={`stat ${props.tone ?? ""}`}
      data-testid={`stat-${props.label.toLowerCase().replace(/\W+/g, "-")}`}
    >
      <div class="stat-label">{props.label}</div>
      <div
        class="stat-value"
        title={
          typeof props.value === "string" || typeof props.value === "number" ? String(props.value) : undefined
        }
      >
        {props.value}
      </div>
      {props.hint !== undefined && <div class="stat-hint">{props.hint}</div>}
    </div>
  );
}

/** Label/value pairs in two columns. */
export function Facts(props: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {props.items.map(([label, value]) => (
        <div key={label} class="fact">
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A monospace identifier, shortened in the middle when long, whole in its tooltip. */
export function Id(props: { value: string | null | undefined; length?: number }) {
  if (!props.value) return <span class="muted">—</span>;
  const max = props.length ?? 18;
  const text =
    props.value.length > max ? `${props.value.slice(0, max - 7)}…${props.value.slice(-6)}` : props.value;
  return (
    <code class="id" title={props.value}>
      {text}
    </code>
  );
}

/** The title row of a page: breadcrumbs, title, a line below it, and actions at the right. */
export function PageHeader(props: {
  title: ComponentChildren;
  crumbs?: [string, string][];
  subtitle?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <header class="page-head">
      <div>
        {props.crumbs && (
          <nav class="crumbs" aria-label="Breadcrumbs">
            {props.crumbs.map(([label, href]) => (
              <span key={href}>
                <a href={href}>{label}</a>
                <span class="crumb-sep">/</span>
              </span>
            ))}
          </nav>
        )}
        <h1>{props.title}</h1>
        {props.subtitle && <p class="page-subtitle">{props.subtitle}</p>}
      </div>
      {props.actions && <div class="page-actions">{props.actions}</div>}
    </header>
  );
}
