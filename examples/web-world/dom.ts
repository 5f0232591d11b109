import { AtriumError } from '@atrium/client';

/** The few DOM helpers the panels share. */

type Child = Node | string | null | undefined | false;

/** An element with attributes (`data-*` included) and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children) if (child) element.append(child);
  return element;
}

/** The page's element for `selector`; the page is broken without it. */
export function find<T extends HTMLElement = HTMLElement>(selector: string): T {
  const found = document.querySelector<T>(selector);
  if (!found) throw new Error(`index.html has no ${selector}`);
  return found;
}

/** What to show a person for a failed call: the stable code and the service's words. */
export function errorText(error: unknown): string {
  if (error instanceof AtriumError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** Runs an action of a button or form, showing its failure in `status` instead of losing it. */
export function guard(status: HTMLElement, action: () => Promise<unknown>): void {
  status.textContent = '';
  action().catch((error: unknown) => {
    status.textContent = errorText(error);
  });
}

/** Appends a line to a log list and keeps it scrolled to the end. */
export function appendLine(list: HTMLElement, item: HTMLElement, keep = 200): void {
  list.append(item);
  while (list.childElementCount > keep) list.firstElementChild?.remove();
  list.scrollTop = list.scrollHeight;
}

export const timeOf = (iso: string): string =>
  new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
