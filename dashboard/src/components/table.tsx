/** Tables and their pager. */

import type { ComponentChildren } from "preact";
import { count } from "../format";

/** One column: its header, how a row shows in it, and whether it holds numbers. */
export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
  numeric?: boolean;
  width?: string;
}

/** A table of rows; `empty` shows in its body when there are none. */
export function Table<T>(props: {
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty: ComponentChildren;
  testId?: string;
  rowClass?: (row: T) => string;
}) {
  return (
    <div class="table-wrap">
      <table class="table" data-testid={props.testId}>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th
                key={c.label}
                class={c.numeric ? "num" : ""}
                style={c.width ? { width: c.width } : undefined}
              >
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.length === 0 ? (
            <tr>
              <td colSpan={props.columns.length} class="empty-cell" data-testid="empty">
                {props.empty}
              </td>
            </tr>
          ) : (
            props.rows.map((row) => (
              <tr key={props.rowKey(row)} class={props.rowClass?.(row)}>
                {props.columns.map((c) => (
                  <td key={c.label} class={c.numeric ? "num" : ""}>
                    {c.cell(row)}
                  </td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

export const PAGE_SIZES = [25, 50, 100, 200];

/**
 * Paging of a server-side listing: the range shown, the total when the broker tells it (else
 * whether there is more), previous/next and the page size. `offset` is that of the rows shown
 * (the broker's, where it says), so the range stays true while the next page loads.
 */
export function Pager(props: {
  offset: number;
  limit: number;
  shown: number;
  total?: number;
  hasMore?: boolean;
  onChange: (offset: number, limit: number) => void;
}) {
  const { offset, limit, shown, total } = props;
  const more = total !== undefined ? offset + shown < total : Boolean(props.hasMore);
  const range = shown === 0 ? "0" : `${count(offset + 1)}–${count(offset + shown)}`;
  return (
    <div class="pager" data-testid="pager">
      <span class="pager-range">
        {range}
        {total !== undefined && <> of {count(total)}</>}
      </span>
      <label class="pager-size">
        Rows
        <select
          value={limit}
          onChange={(e) => props.onChange(0, Number((e.target as HTMLSelectElement).value))}
        >
          {PAGE_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <button
        type="button"
        class="button small"
        disabled={offset === 0}
        onClick={() => props.onChange(Math.max(0, offset - limit), limit)}
      >
        ← Previous
      </button>
      <button
        type="button"
        class="button small"
        disabled={!more}
        onClick={() => props.onChange(offset + limit, limit)}
      >
        Next →
      </button>
    </div>
  );
}
