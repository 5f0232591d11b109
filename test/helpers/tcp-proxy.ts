import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './redis-server.js';

/**
 * - `forward`: a plain TCP relay.
 * - `blackhole`: a silent network. Connections are still accepted, but no byte gets through in
 *   either direction and nobody is told: bytes wait, as TCP retransmits them, and flow again once
 *   the proxy forwards again (connections accepted meanwhile reach the server only then).
 * - `refuse`: the port is closed (connection refused) and open connections are reset, as when
 *   the server is down.
 */
export type ProxyMode = 'forward' | 'blackhole' | 'refuse';

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
}

/**
 * A TCP proxy in front of a real server whose network a test can break and mend, to see how the
 * app behaves during an outage of that server and after it.
 */
export class TcpProxy {
  private mode: ProxyMode = 'forward';
  private server: Server | undefined;
  private readonly pairs = new Set<Pair>();
  private dropWhen: ((chunk: Buffer) => boolean) | undefined;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target, await freePort());
    await proxy.listen();
    return proxy;
  }

  async setMode(mode: ProxyMode): Promise<void> {
    const previous = this.mode;
    this.mode = mode;
    if (mode === 'refuse') {
      for (const pair of this.pairs) this.drop(pair);
      await this.unlisten();
      return;
    }
    if (previous === 'refuse') await this.listen();
    for (const pair of this.pairs) {
      if (mode === 'blackhole') {
        pair.client.pause();
        pair.upstream?.pause();
      } else {
        pair.upstream ??= this.connectUpstream(pair);
        pair.client.resume();
        pair.upstream.resume();
      }
    }
  }

  /**
   * Resets the next connection whose client sends bytes that `matches` (those bytes never reach
   * the server), once: a connection lost at one chosen step of a client's conversation.
   */
  dropOnce(matches: (chunk: Buffer) => boolean): void {
    this.dropWhen = matches;
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) this.drop(pair);
    await this.unlisten();
  }

  private async listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    server.listen(this.port, '127.0.0.1');
    await once(server, 'listening');
    this.server = server;
  }

  private async unlisten(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = once(server, 'close');
    server.close();
    await closed;
  }

  private accept(client: Socket): void {
    const pair: Pair = { client, upstream: undefined };
    this.pairs.add(pair);
    client.on('error', () => this.drop(pair));
    client.on('close', () => this.drop(pair));
    if (this.mode === 'blackhole') client.pause();
    else pair.upstream = this.connectUpstream(pair);
  }

  /** Relays with 'data' listeners rather than pipe(), so that pause() alone holds the bytes. */
  private connectUpstream(pair: Pair): Socket {
    const upstream = connect(this.target.port, this.target.host);
    upstream.on('error', () => this.drop(pair));
    upstream.on('close', () => this.drop(pair));
    pair.client.on('data', (chunk: Buffer) => {
      if (this.dropWhen?.(chunk)) {
        this.dropWhen = undefined;
        this.drop(pair);
      } else upstream.write(chunk);
    });
    upstream.on('data', (chunk) => pair.client.write(chunk));
    return upstream;
  }

  /** Resets both ends, as a restarted server or a broken network would. */
  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.resetAndDestroy();
    pair.upstream?.resetAndDestroy();
  }
}
