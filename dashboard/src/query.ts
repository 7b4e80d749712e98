/** Filters and paging kept in the address bar, so a reload or a shared link shows the same view. */

import { useCallback } from "preact/hooks";
import { useLocation, useSearch } from "wouter-preact";

/** The page's query parameters, and a setter that merges a patch into them (empty values drop). */
export function useQueryParams(): [
  URLSearchParams,
  (patch: Record<string, string | number | undefined>) => void,
] {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = new URLSearchParams(search);
  const set = useCallback(
    (patch: Record<string, string | number | undefined>) => {
      const next = new URLSearchParams(search);
      for (const [key, value] of Object.entries(patch)) {
        if (value === undefined || value === "") next.delete(key);
        else next.set(key, String(value));
      }
      const text = next.toString();
      navigate(text ? `${location}?${text}` : location, { replace: true });
    },
    [search, location, navigate],
  );
  return [params, set];
}

/** A non-negative integer parameter, or `fallback`. */
export function intParam(params: URLSearchParams, key: string, fallback: number): number {
  const value = Number(params.get(key));
  return Number.isInteger(value) && value >= 0 && params.get(key) !== null ? value : fallback;
}

/** Path of a page, with its segments encoded. */
export function pathOf(...segments: string[]): string {
  return "/" + segments.map((s, i) => (i === 0 ? s : encodeURIComponent(s))).join("/");
}
