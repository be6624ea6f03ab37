// HTML for the web pages, escaped by construction: `html` is a tagged template whose every
// interpolated value is escaped (text and attribute values alike; attributes are always quoted),
// unless it is itself the result of `html` (a fragment built the same way). Arrays join.
const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (character) => escapes[character] as string);
}

type Value = Html | string | number | null | undefined | false | Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  return new Html(strings.reduce((out, part, index) => out + part + (index < values.length ? render(values[index] as Value) : ''), ''));
}
