/** Sign-in: the broker answered 401, so ask for a bearer token and keep it for this tab. */

import { useState } from "preact/hooks";
import { admin, failure, setToken, type Failure } from "../api";
import { ErrorBox } from "../components/ui";

export function Login(props: { refused: boolean; onSignedIn: () => void }) {
  const [value, setValue] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Failure | undefined>();

  async function submit(e: Event) {
    e.preventDefault();
    const candidate = value.trim();
    if (!candidate) return;
    setBusy(true);
    setError(undefined);
    setToken(candidate);
    try {
      // Any read-only call proves the token; its 401 would bring us back here.
      await admin.queues({ limit: 1 });
      props.onSignedIn();
    } catch (caught) {
      const f = failure(caught);
      // A token whose role cannot list queues is still a valid token.
      if (f.status === 403) props.onSignedIn();
      else {
        setToken("");
        setError(f);
      }
    } finally {
      setBusy(false);
    }
  }

  return (
    <div class="login">
      <form class="login-card" onSubmit={submit} data-testid="login">
        <div class="brand login-brand">
          <span class="brand-mark">R</span>
          <span>Regina</span>
        </div>
        <h1>Sign in</h1>
        <p class="muted">
          {props.refused
            ? "The broker refused the token of this tab (expired or invalid). Paste another one."
            : "This broker requires authentication. Paste a bearer token (JWT); it is kept for this browser tab only."}
        </p>
        <label class="field">
          <span>Token</span>
          <textarea
            rows={4}
            value={value}
            onInput={(e) => setValue((e.target as HTMLTextAreaElement).value)}
            placeholder="eyJhbGciOi…"
            spellcheck={false}
            autoFocus
            aria-label="Token"
          />
        </label>
        {error && <ErrorBox error={error} compact />}
        <button type="submit" class="button primary wide" disabled={busy || !value.trim()}>
          {busy ? "Checking…" : "Sign in"}
        </button>
      </form>
    </div>
  );
}
