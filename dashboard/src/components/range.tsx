/** A time range filter: a preset (last 15 minutes … last 7 days) or a custom from/to. */

import { fromLocalInput, toLocalInput } from "../format";

export const RANGE_PRESETS: [string, string, number][] = [
  ["15m", "Last 15 minutes", 15 * 60],
  ["1h", "Last hour", 3600],
  ["6h", "Last 6 hours", 6 * 3600],
  ["24h", "Last 24 hours", 86_400],
  ["7d", "Last 7 days", 7 * 86_400],
  ["30d", "Last 30 days", 30 * 86_400],
];

/**
 * The instants of a range: `from`/`to` for a custom one, none for `all`, else the preset counted
 * back from `now`.
 */
export function rangeInstants(
  range: string,
  from: string | null,
  to: string | null,
  now: number,
): { from?: string; to?: string } {
  if (range === "custom") return { from: from ?? undefined, to: to ?? undefined };
  const preset = RANGE_PRESETS.find(([key]) => key === range);
  if (!preset) return {};
  return { from: new Date(now - preset[2] * 1000).toISOString() };
}

export function RangeField(props: {
  range: string;
  from: string | null;
  to: string | null;
  /** When given, a first choice `all` (no bounds) with this label. */
  anyLabel?: string;
  onChange: (patch: { range?: string; from?: string; to?: string }) => void;
}) {
  return (
    <>
      <label class="field">
        <span>Time range</span>
        <select
          value={props.range}
          onChange={(e) => props.onChange({ range: (e.target as HTMLSelectElement).value })}
          aria-label="Time range"
        >
          {props.anyLabel && <option value="all">{props.anyLabel}</option>}
          {RANGE_PRESETS.map(([key, label]) => (
            <option key={key} value={key}>
              {label}
            </option>
          ))}
          <option value="custom">Custom…</option>
        </select>
      </label>
      {props.range === "custom" && (
        <>
          <label class="field">
            <span>From</span>
            <input
              type="datetime-local"
              step={1}
              value={toLocalInput(props.from ?? undefined)}
              onChange={(e) => props.onChange({ from: fromLocalInput((e.target as HTMLInputElement).value) })}
              aria-label="From"
            />
          </label>
          <label class="field">
            <span>To</span>
            <input
              type="datetime-local"
              step={1}
              value={toLocalInput(props.to ?? undefined)}
              onChange={(e) => props.onChange({ to: fromLocalInput((e.target as HTMLInputElement).value) })}
              aria-label="To"
            />
          </label>
        </>
      )}
    </>
  );
}
