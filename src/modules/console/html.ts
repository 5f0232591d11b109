/**
 * HTML built with one tagged template that escapes every interpolated value unless it is already
 * markup made by this template (`Html`): user text can only ever land as text. `raw` does not
 * exist on purpose; a fragment is made with `html` or not at all.
 */

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Text made safe for an element's content and for a quoted attribute value alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => ESCAPES[char] as string);
}

/** Markup this module built. Only `html` makes one. */
export class Html {
  private constructor(readonly markup: string) {}

  /** @internal The template's own constructor; nothing else may wrap a string. */
  static fromTemplate(markup: string): Html {
    return new Html(markup);
  }

  toString(): string {
    return this.markup;
  }
}

/** What may be interpolated: text and numbers (escaped), markup, lists of them, or nothing. */
export type Interpolated = Html | string | number | boolean | null | undefined | readonly Interpolated[];

function render(value: Interpolated): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return Html.fromTemplate(out);
}
