/** A JSON value, pretty-printed with its tokens coloured. */

import type { JSX } from "preact";

const TOKEN = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

/** Splits pretty JSON into coloured spans (strings, keys, numbers, literals). */
function highlight(text: string): (string | JSX.Element)[] {
  const parts: (string | JSX.Element)[] = [];
  let last = 0;
  for (const match of text.matchAll(TOKEN)) {
    const at = match.index ?? 0;
    if (at > last) parts.push(text.slice(last, at));
    const [whole, string, colon, literal, number] = match;
    if (string !== undefined) {
      parts.push(
        <span key={at} class={colon ? "j-key" : "j-string"}>
          {string}
        </span>,
      );
      if (colon) parts.push(colon);
    } else if (literal !== undefined) {
      parts.push(
        <span key={at} class="j-literal">
          {literal}
        </span>,
      );
    } else if (number !== undefined) {
      parts.push(
        <span key={at} class="j-number">
          {number}
        </span>,
      );
    }
    last = at + whole.length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

export function JsonView(props: { value: unknown; testId?: string }) {
  const text = props.value === undefined ? "undefined" : JSON.stringify(props.value, null, 2);
  return (
    <pre class="json" data-testid={props.testId ?? "json"}>
      {highlight(text)}
    </pre>
  );
}
