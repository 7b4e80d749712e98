/** A text filter that updates its query parameter once the user pauses typing. */

import { useEffect, useState } from "preact/hooks";

/** Milliseconds of quiet before a typed filter is applied. */
const DEBOUNCE_MILLIS = 300;

export function SearchField(props: {
  label: string;
  value: string;
  placeholder?: string;
  onChange: (value: string) => void;
  grow?: boolean;
}) {
  const [text, setText] = useState(props.value);
  const { onChange, value } = props;
  useEffect(() => setText(value), [value]);
  useEffect(() => {
    if (text === value) return undefined;
    const timer = setTimeout(() => onChange(text.trim()), DEBOUNCE_MILLIS);
    return () => clearTimeout(timer);
  }, [text, value, onChange]);
  return (
    <label class={`field ${props.grow ? "grow" : ""}`}>
      <span>{props.label}</span>
      <input
        type="search"
        value={text}
        placeholder={props.placeholder}
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
        aria-label={props.label}
      />
    </label>
  );
}
