import type { AtriumClient, ConnectionState } from '@atrium/client';

/**
 * The connection indicator: the client's state as `data-state` (what test/examples/web-world
 * waits on) and in words, with why it is reconnecting. AtriumClient reconnects by itself and
 * replays the events missed meanwhile; the panels re-make their subscriptions on `ready`.
 */

const LABELS: Record<ConnectionState, string> = {
  offline: 'offline',
  connecting: 'connecting…',
  authenticating: 'signing in…',
  ready: 'connected',
  reconnecting: 'reconnecting…',
  closed: 'closed',
};

export function showConnectionState(client: AtriumClient, indicator: HTMLElement): void {
  const show = (state: ConnectionState, cause?: { message: string }) => {
    indicator.dataset.state = state;
    indicator.textContent = LABELS[state];
    indicator.title = cause ? cause.message : '';
  };
  show(client.state);
  client.onStateChange(show);
}
