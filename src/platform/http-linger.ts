import type { Socket } from 'node:net';

/** A lingering connection is closed once the client has sent nothing for this long... */
const LINGER_IDLE_MS = 2000;
/** ...or after this long in all, whatever the client still sends. */
const LINGER_MAX_MS = 30_000;

/**
 * Lingering close for connections the server answers before it has read the whole request (a
 * body over the limit, headers over the limit). Closing such a socket at once makes the kernel
 * reset the connection, since unread bytes are still queued, and a client that is still uploading
 * then fails on its next write and never reads the answer. Instead the server sends its response
 * and a FIN, then keeps reading and discarding what the client sends until the client closes, goes
 * quiet, or the time bound runs out. Only then is the socket destroyed.
 */
export class LingeringClose {
  private readonly sockets = new Set<Socket>();

  /**
   * Makes the close Node performs after the current `Connection: close` response a lingering one.
   * Node's HTTP server closes that socket through `destroySoon()` once the response is written,
   * and calls it nowhere else, so replacing this socket's `destroySoon` changes only that close.
   */
  afterResponse(socket: Socket): void {
    socket.destroySoon = () => this.start(socket);
  }

  /** Ends the socket after what was written so far and discards what the client still sends. */
  start(socket: Socket): void {
    if (socket.destroyed || this.sockets.has(socket)) return;
    this.sockets.add(socket);
    socket.end();
    // The HTTP parser may read the socket's handle directly, so progress is read from bytesRead
    // rather than from data events; the socket keeps flowing, which discards the bytes.
    socket.resume();
    const startedAt = Date.now();
    let bytesSeen = socket.bytesRead;
    const timer = setInterval(() => {
      const quiet = socket.bytesRead === bytesSeen;
      bytesSeen = socket.bytesRead;
      if (quiet || Date.now() - startedAt >= LINGER_MAX_MS) socket.destroy();
    }, LINGER_IDLE_MS);
    timer.unref();
    socket.once('close', () => {
      clearInterval(timer);
      this.sockets.delete(socket);
    });
  }

  /** Destroys every lingering socket, so that closing the server does not wait on them. */
  destroyAll(): void {
    for (const socket of this.sockets) socket.destroy();
  }
}
