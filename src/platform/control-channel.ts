import { lstat, mkdir, stat, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ErrorCode } from './errors.js';
import type { LogSink } from './log.js';

/**
 * The control channel: a unix domain socket under DATA_DIR through which the CLI asks a running
 * server to do an operator's command (`atrium admin grant`), because the embedded database can be
 * opened by one process only. It is never a network port: whoever may connect is whoever the file
 * system lets write to the socket, the server's own account (the file is 0600).
 *
 * One request per line, newline-delimited JSON, answered in order on the same connection:
 *   -> {"command": "admin.grant", "args": {"username": "alice", "role": "admin"}}
 *   <- {"ok": true, "exit_code": 0, "stdout": ["..."], "stderr": []}
 *   <- {"ok": false, "error": {"code": "NOT_FOUND", "message": "..."}}
 */

export const CONTROL_SOCKET_NAME = 'control.sock';

/** sun_path holds 108 bytes on Linux and 104 on macOS, the terminating NUL included. */
const MAX_SOCKET_PATH_BYTES = 103;

/** Who asked: the audit log records the command's actor from here. */
export interface ControlContext {
  actor: { kind: 'cli' };
}

/** What a CLI command prints, and its exit code: the same whether a server or the CLI ran it. */
export interface ControlOutput {
  exitCode: number;
  stdout: string[];
  stderr: string[];
}

export interface ControlCommand<Args> {
  /** Validates the request's `args`; a failure answers VALIDATION_FAILED and runs nothing. */
  args: z.ZodType<Args>;
  run(ctx: ControlContext, args: Args): Promise<ControlOutput>;
}

export type ControlRequest = { command: string; args?: Record<string, unknown> };

export type ControlReply =
  | { ok: true; exit_code: number; stdout: string[]; stderr: string[] }
  | { ok: false; error: { code: ErrorCode; message: string } };

/** How a `listen` ended: only `listening` serves; the others were logged with their reason. */
export type ControlListenOutcome = 'listening' | 'in use' | 'unsafe' | 'unavailable';

export interface ControlChannelOptions {
  log: LogSink;
  /** A request line longer than this is refused and its connection closed. */
  maxRequestBytes?: number;
  /** A connection that sends nothing for this long is closed. */
  idleTimeoutMs?: number;
  /** A command still running after this long is answered SERVICE_UNAVAILABLE (it may still finish). */
  commandTimeoutMs?: number;
  /** Connections served at once; more are refused by the server socket. */
  maxConnections?: number;
  /** How long `close` waits for running commands before it cuts their connections. */
  closeGraceMs?: number;
}

const requestSchema = z.object({
  command: z.string().min(1).max(100),
  args: z.record(z.string(), z.unknown()).optional(),
});

/**
 * The socket path for DATA_DIR, or undefined where there is none: on Windows (no unix sockets of
 * this kind; the CLI opens the database itself there) and when the absolute path is too long for
 * a socket address.
 */
export function controlSocketPath(dataDir: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  const path = resolve(dataDir, CONTROL_SOCKET_NAME);
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES ? path : undefined;
}

function refusal(code: ErrorCode, message: string): ControlReply {
  return { ok: false, error: { code, message } };
}

export function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Named commands, run from request lines; `listen` serves them on DATA_DIR's socket. */
export class ControlChannel {
  private readonly commands = new Map<string, ControlCommand<unknown>>();
  private readonly sockets = new Set<Socket>();
  private readonly running = new Set<Promise<unknown>>();
  private server: Server | undefined;
  private readonly maxRequestBytes: number;
  private readonly idleTimeoutMs: number;
  private readonly commandTimeoutMs: number;
  private readonly maxConnections: number;
  private readonly closeGraceMs: number;

  constructor(private readonly options: ControlChannelOptions) {
    this.maxRequestBytes = options.maxRequestBytes ?? 64 * 1024;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 10_000;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 300_000;
    this.maxConnections = options.maxConnections ?? 8;
    this.closeGraceMs = options.closeGraceMs ?? 10_000;
  }

  register<Args>(name: string, command: ControlCommand<Args>): this {
    if (this.commands.has(name)) throw new Error(`The control command ${name} is registered twice.`);
    this.commands.set(name, command as ControlCommand<unknown>);
    return this;
  }

  /**
   * Validates a request and runs its command. A refusal (malformed, unknown, bad args) is a reply;
   * an error the command throws is thrown, so the CLI running a command itself reports it as any
   * other failure and the socket answers INTERNAL.
   */
  async execute(request: unknown, ctx: ControlContext = { actor: { kind: 'cli' } }): Promise<ControlReply> {
    const parsed = requestSchema.safeParse(request);
    if (!parsed.success) {
      return refusal(
        ErrorCode.MALFORMED_REQUEST,
        'A request is {"command": "<name>", "args": {...}} on one line.',
      );
    }
    const command = this.commands.get(parsed.data.command);
    if (!command) {
      return refusal(
        ErrorCode.NOT_FOUND,
        `Unknown command ${JSON.stringify(parsed.data.command)}; commands are ${[...this.commands.keys()].join(', ')}.`,
      );
    }
    const args = command.args.safeParse(parsed.data.args ?? {});
    if (!args.success) return refusal(ErrorCode.VALIDATION_FAILED, z.prettifyError(args.error));
    const output = await command.run(ctx, args.data);
    return { ok: true, exit_code: output.exitCode, stdout: output.stdout, stderr: output.stderr };
  }

  /**
   * Serves the commands on DATA_DIR's socket. A socket file nobody answers on is a crashed
   * server's and is replaced; one a live server answers on is left to it (this server then runs
   * without a channel). A DATA_DIR others may write to could have the socket swapped under us, so
   * no channel is opened there. None of these stop the server: they are logged.
   */
  async listen(dataDir: string): Promise<ControlListenOutcome> {
    const { log } = this.options;
    const path = controlSocketPath(dataDir);
    if (!path) {
      log.warn({ dataDir }, 'control channel off: no unix socket on this platform or DATA_DIR path too long');
      return 'unavailable';
    }
    let mode: number;
    try {
      await mkdir(dataDir, { recursive: true, mode: 0o700 });
      mode = (await stat(dataDir)).mode;
    } catch (error) {
      log.warn({ err: error, dataDir }, 'control channel off: DATA_DIR could not be read');
      return 'unavailable';
    }
    if ((mode & 0o022) !== 0) {
      log.warn(
        { dataDir, mode: (mode & 0o777).toString(8) },
        'control channel off: DATA_DIR is writable by group or others (chmod go-w it); the CLI will open the database itself',
      );
      return 'unsafe';
    }
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        this.server = await this.bind(path);
        log.info({ path }, 'control channel listening');
        return 'listening';
      } catch (error) {
        if (errnoOf(error) !== 'EADDRINUSE') {
          log.warn({ err: error, path }, 'control channel off: could not listen');
          return 'unavailable';
        }
      }
      if (await answers(path)) {
        log.warn({ path }, 'control channel off: another live server on this DATA_DIR serves it');
        return 'in use';
      }
      const existing = await lstat(path).catch(() => undefined);
      if (existing && !existing.isSocket()) {
        log.warn({ path }, 'control channel off: a file that is not a socket has its name');
        return 'unavailable';
      }
      await unlink(path).catch((error) => {
        if (errnoOf(error) !== 'ENOENT') throw error;
      });
      log.info({ path }, 'removed a stale control socket (its server is gone)');
    }
    log.warn({ path }, 'control channel off: its socket path stayed in use');
    return 'unavailable';
  }

  /** Stops listening (the socket file goes with it), lets running commands finish, closes connections. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((done) => server.close(() => done()));
    if (this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.running]),
        new Promise((done) => {
          timer = setTimeout(done, this.closeGraceMs);
        }),
      ]);
      clearTimeout(timer);
    }
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private bind(path: string): Promise<Server> {
    return new Promise((resolveServer, reject) => {
      const server = createServer((socket) => this.serve(socket));
      server.maxConnections = this.maxConnections;
      server.once('error', reject);
      // `exclusive` binds here and now, even in a cluster worker, so the umask applies to the
      // bind: the socket never exists with wider permissions than 0600, not even for a moment.
      const previous = process.umask(0o177);
      try {
        server.listen({ path, exclusive: true }, () => {
          server.off('error', reject);
          resolveServer(server);
        });
      } finally {
        process.umask(previous);
      }
    });
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    // A client that vanished mid-answer is its own problem, never the server's.
    socket.on('error', () => {});
    socket.setTimeout(this.idleTimeoutMs, () => socket.destroy());
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let queued = 0;
    let refused = false;
    let queue = Promise.resolve();
    const enqueue = (work: () => Promise<void> | void) => {
      // Requests are answered in order; a client that sends faster than they run waits.
      if (++queued >= 16) socket.pause();
      queue = queue.then(work).finally(() => {
        if (--queued < 16 && !refused) socket.resume();
      });
    };
    socket.on('data', (chunk: Buffer) => {
      if (refused) return;
      let start = 0;
      let tooLarge = false;
      for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
        const piece = chunk.subarray(start, end);
        start = end + 1;
        if (pendingBytes + piece.length > this.maxRequestBytes) {
          tooLarge = true;
          break;
        }
        const line = Buffer.concat([...pending, piece]).toString('utf8');
        pending = [];
        pendingBytes = 0;
        enqueue(() => this.answer(socket, line));
      }
      if (!tooLarge) {
        const rest = chunk.subarray(start);
        pendingBytes += rest.length;
        tooLarge = pendingBytes > this.maxRequestBytes;
        if (!tooLarge && rest.length > 0) pending.push(rest);
      }
      if (!tooLarge) return;
      // Over the limit: answer once, stop reading, and close soon whatever the client does.
      refused = true;
      pending = [];
      const reply = refusal(
        ErrorCode.PAYLOAD_TOO_LARGE,
        `A request line may hold at most ${this.maxRequestBytes} bytes.`,
      );
      enqueue(() => {
        socket.end(`${JSON.stringify(reply)}\n`);
        setTimeout(() => socket.destroy(), 1000).unref();
      });
    });
  }

  private async answer(socket: Socket, line: string): Promise<void> {
    if (socket.destroyed) return;
    const work = this.reply(line);
    this.running.add(work);
    try {
      const reply = await work;
      if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
    } finally {
      this.running.delete(work);
    }
  }

  private async reply(line: string): Promise<ControlReply> {
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch {
      return refusal(ErrorCode.MALFORMED_REQUEST, 'A request is one JSON object on one line.');
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<ControlReply>((done) => {
      timer = setTimeout(
        () =>
          done(
            refusal(
              ErrorCode.SERVICE_UNAVAILABLE,
              `The command did not finish within ${this.commandTimeoutMs} ms; it may still complete.`,
            ),
          ),
        this.commandTimeoutMs,
      );
    });
    try {
      return await Promise.race([this.execute(request), timedOut]);
    } catch (error) {
      this.options.log.error({ err: error }, 'control command failed');
      return refusal(ErrorCode.INTERNAL, 'The command failed; the server log has the details.');
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Whether a server accepts connections on `path`; a refused or missing socket does not. */
function answers(path: string): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ path });
    socket.setTimeout(2000, () => {
      // Something holds the socket but does not accept: treat it as live rather than steal it.
      socket.destroy();
      done(true);
    });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', (error) => done(!['ECONNREFUSED', 'ENOENT'].includes(errnoOf(error) ?? '')));
  });
}
