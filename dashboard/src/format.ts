/** Formatting of counts, durations, sizes and times, the same on every page. */

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });

/** `12,345`; `—` for a missing value. */
export function count(value: number | null | undefined): string {
  return value === null || value === undefined || Number.isNaN(value) ? "—" : integer.format(value);
}

/** `12.5`, `1,234`: one decimal below 100. */
export function rate(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  return Math.abs(value) < 100 ? decimal.format(value) : integer.format(value);
}

/** `0 s`, `42 s`, `3 min 5 s`, `2 h 10 min`, `3 d 4 h`. */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "—";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return pair(Math.floor(s / 60), "min", s % 60, "s");
  if (s < 86_400) return pair(Math.floor(s / 3600), "h", Math.floor((s % 3600) / 60), "min");
  return pair(Math.floor(s / 86_400), "d", Math.floor((s % 86_400) / 3600), "h");
}

function pair(major: number, majorUnit: string, minor: number, minorUnit: string): string {
  return minor ? `${major} ${majorUnit} ${minor} ${minorUnit}` : `${major} ${majorUnit}`;
}

/** `512 B`, `1.5 KiB`, `20.0 MiB`. */
export function bytes(value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = value;
  let unit = 0;
  while (v >= 1024 && unit < units.length - 1) {
    v /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${v} B` : `${v.toFixed(1)} ${units[unit]}`;
}

/** `2026-05-10 09:00:01 UTC`. */
export function absolute(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** `just now`, `12 s ago`, `5 min ago`, `in 3 min`, relative to `now`. */
export function relative(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return "—";
  const at = new Date(iso).getTime();
  if (Number.isNaN(at)) return iso;
  const seconds = Math.round((now - at) / 1000);
  if (Math.abs(seconds) < 5) return "just now";
  const text = duration(Math.abs(seconds)).replace(/ \d+ (s|min|h)$/, "");
  return seconds > 0 ? `${text} ago` : `in ${text}`;
}

/** The value of a `<input type="datetime-local">` (local time) as an ISO instant, or undefined. */
export function fromLocalInput(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** An ISO instant as the value of a `<input type="datetime-local">` (local time, seconds). */
export function toLocalInput(iso: string | undefined): string {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 19);
}

/** The consumer group name as people read it: queue mode has a name of its own. */
export function groupName(name: string): string {
  return name === "__QUEUE_MODE__" ? "queue mode" : name;
}
