import type { AtriumClient, TokenResponse } from '@atrium/client';
import { errorText } from './dom.js';

/**
 * Signing in and staying signed in. The refresh token is kept in sessionStorage, so a reload of
 * the tab resumes its session while two tabs can be two users. The access token is renewed before
 * it expires (the socket is closed with 4403 at its expiry otherwise) and handed to the client,
 * which re-authenticates its socket with it.
 */

const REFRESH_TOKEN_KEY = 'atrium-web-world:refresh-token';
/** Renew at this share of the access token's life. */
const RENEW_AT = 0.8;
const RETRY_RENEWAL_MS = 5_000;

/** The session of this tab: resumed, or started with the form once a person fills it in. */
export async function signIn(
  client: AtriumClient,
  form: HTMLFormElement,
  status: HTMLElement,
): Promise<TokenResponse> {
  const stored = sessionStorage.getItem(REFRESH_TOKEN_KEY);
  if (stored) {
    try {
      return begin(client, await client.call('auth.refresh', { refresh_token: stored }));
    } catch {
      sessionStorage.removeItem(REFRESH_TOKEN_KEY);
    }
  }
  return new Promise((resolve) => {
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const submitter = (event as SubmitEvent).submitter as HTMLButtonElement | null;
      const username = (form.elements.namedItem('username') as HTMLInputElement).value.trim();
      const password = (form.elements.namedItem('password') as HTMLInputElement).value;
      const answer =
        submitter?.value === 'register'
          ? client.call('auth.register', { username, password, accept_terms: true, confirm_18_plus: true })
          : client.call('auth.login', { username, password });
      status.textContent = '';
      answer.then(
        (tokens) => resolve(begin(client, tokens)),
        (error: unknown) => {
          status.textContent = errorText(error);
        },
      );
    });
  });
}

/** Ends the session on the service and starts the page again at its sign-in form. */
export async function signOut(client: AtriumClient): Promise<void> {
  const refreshToken = sessionStorage.getItem(REFRESH_TOKEN_KEY);
  sessionStorage.removeItem(REFRESH_TOKEN_KEY);
  if (refreshToken) await client.call('auth.logout', { refresh_token: refreshToken }).catch(() => undefined);
  client.close();
  window.location.reload();
}

function begin(client: AtriumClient, tokens: TokenResponse): TokenResponse {
  client.setAccessToken(tokens.access_token);
  keepFresh(client, tokens);
  return tokens;
}

function keepFresh(client: AtriumClient, tokens: TokenResponse): void {
  sessionStorage.setItem(REFRESH_TOKEN_KEY, tokens.refresh_token);
  const renew = () => {
    if (client.state === 'closed') return;
    client.call('auth.refresh', { refresh_token: tokens.refresh_token }).then(
      (fresh) => {
        client.setAccessToken(fresh.access_token);
        keepFresh(client, fresh);
      },
      // The service may be down for a moment; the refresh token stays good until it is spent.
      () => setTimeout(renew, RETRY_RENEWAL_MS),
    );
  };
  setTimeout(renew, tokens.expires_in * 1000 * RENEW_AT);
}
