/** Data loading and actions with loading, error and refresh states, shared by every page. */

import { createContext } from "preact";
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks";
import { failure, type Failure } from "./api";

/** What a page knows about one call: its last data, its last failure, and whether it runs. */
export interface Resource<T> {
  data: T | undefined;
  error: Failure | undefined;
  /** A call is in flight (the first one, or a reload after the key changed). */
  loading: boolean;
  reload: () => void;
}

/**
 * Loads `load()` whenever `key` changes (the key names everything the call depends on), and
 * every `refreshMillis` if given. The previous data stays visible while the next call runs, so
 * pages do not jump; a call superseded by a newer one is aborted and ignored.
 */
export function useResource<T>(
  key: string,
  load: (signal: AbortSignal) => Promise<T>,
  refreshMillis?: number,
): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: Failure; loading: boolean }>({ loading: true });
  const [generation, setGeneration] = useState(0);
  const loader = useRef(load);
  loader.current = load;

  useEffect(() => {
    const controller = new AbortController();
    setState((previous) => ({ ...previous, loading: true }));
    loader
      .current(controller.signal)
      .then((data) => {
        if (!controller.signal.aborted) setState({ data, loading: false });
      })
      .catch((error: unknown) => {
        if (!controller.signal.aborted)
          setState((previous) => ({ ...previous, error: failure(error), loading: false }));
      });
    return () => controller.abort();
  }, [key, generation]);

  useEffect(() => {
    if (!refreshMillis) return undefined;
    const timer = setInterval(() => setGeneration((g) => g + 1), refreshMillis);
    return () => clearInterval(timer);
  }, [key, refreshMillis]);

  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** The access an action needs (http-api.md §1.6): read-write, or admin. */
export type ActionLevel = "write" | "admin";

/** Which actions the broker refused with `403` in this session. */
export interface Permissions {
  denied: Record<ActionLevel, boolean>;
  deny: (level: ActionLevel) => void;
}

export const PermissionsContext = createContext<Permissions>({
  denied: { write: false, admin: false },
  deny: () => {},
});

/** Whether actions of `level` were refused in this session. */
export function useDenied(level: ActionLevel): boolean {
  const { denied } = useContext(PermissionsContext);
  return denied[level] || (level === "admin" && denied.write);
}

/** One user action: its running state, its failure, and the message of its success. */
export interface Action {
  busy: boolean;
  error: Failure | undefined;
  done: string | undefined;
  /** Runs `act`; on success shows `success(result)` and calls `after`. */
  run: <R>(
    act: () => Promise<R>,
    success: (result: R) => string,
    after?: (result: R) => void,
  ) => Promise<void>;
  clear: () => void;
}

/** An action of `level`; a `403` disables every action of that level for the session. */
export function useAction(level: ActionLevel): Action {
  const { deny } = useContext(PermissionsContext);
  const [state, setState] = useState<{ busy: boolean; error?: Failure; done?: string }>({ busy: false });
  const run = useCallback(
    async <R>(act: () => Promise<R>, success: (result: R) => string, after?: (result: R) => void) => {
      setState({ busy: true });
      try {
        const result = await act();
        setState({ busy: false, done: success(result) });
        after?.(result);
      } catch (error) {
        const f = failure(error);
        if (f.status === 403) deny(level);
        setState({ busy: false, error: f });
      }
    },
    [deny, level],
  );
  const clear = useCallback(() => setState({ busy: false }), []);
  return { busy: state.busy, error: state.error, done: state.done, run, clear };
}

/** The current time, updated every `everyMillis` (relative times stay true without reloads). */
export function useNow(everyMillis = 10_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMillis);
    return () => clearInterval(timer);
  }, [everyMillis]);
  return now;
}
