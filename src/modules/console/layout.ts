import { type Html, html } from './html.js';
import type { ConsolePage } from './page.js';
import type { Flash } from './session.js';

/** The console's static files, served by console.routes.ts; no inline script or style anywhere. */
export const ASSETS = { css: '/console/assets/console.css', js: '/console/assets/console.js' } as const;

function document(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Atrium console</title>
<link rel="stylesheet" href="${ASSETS.css}">
<script src="${ASSETS.js}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${body}
</body>
</html>`;
}

/** A signed-in page: header with the operator and sign-out, navigation, the flash, the content. */
export function shell(input: {
  title: string;
  path: string;
  operator: { username: string; roles: readonly string[] };
  csrf: string;
  nav: readonly ConsolePage[];
  flash?: Flash | undefined;
  content: Html;
}): Html {
  const flash = input.flash
    ? html`<div class="flash ${input.flash.kind}" role="${input.flash.kind === 'error' ? 'alert' : 'status'}">${input.flash.text}</div>`
    : '';
  return document(
    input.title,
    html`<header class="top">
  <span class="brand">Atrium console</span>
  <span class="who">${input.operator.username} (${input.operator.roles.filter((r) => r !== 'user').join(', ')})</span>
  <form method="post" action="/console/sign-out" class="inline">
    <input type="hidden" name="_csrf" value="${input.csrf}">
    <button type="submit">Sign out</button>
  </form>
</header>
<nav aria-label="Console"><ul>${input.nav.map(
      (page) =>
        html`<li><a href="${page.path}"${page.path === input.path ? html` aria-current="page"` : ''}>${page.title}</a></li>`,
    )}</ul></nav>
<main id="main" tabindex="-1">
<h1>${input.title}</h1>
${flash}
${input.content}
</main>`,
  );
}

/** A page outside the signed-in shell: sign-in, a refusal. */
export function bare(title: string, content: Html): Html {
  return document(
    title,
    html`<header class="top"><span class="brand">Atrium console</span></header>
<main id="main" tabindex="-1" class="narrow">
<h1>${title}</h1>
${content}
</main>`,
  );
}
