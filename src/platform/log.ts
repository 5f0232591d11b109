import type { FastifyBaseLogger } from 'fastify';
import {
  type BaseLogger,
  type Bindings,
  type ChildLoggerOptions,
  type DestinationStream,
  type Logger,
  pino,
} from 'pino';
import type { PlatformConfig } from './platform-config.js';

export type { Logger };

/** What services log through: the root logger, a socket's or a request's (possibly lazy) child. */
export type LogSink = Pick<BaseLogger, 'level' | 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'>;

/**
 * Paths that may carry secrets. pino replaces them before a line is written, so a token or a
 * password never reaches a log file even when a request or frame is logged whole.
 */
const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.password',
  '*.access_token',
  '*.refresh_token',
  '*.server_token',
  '*.token',
];

/** JSON lines to stdout, or to `destination` (tests read what was logged). */
export function createLogger(
  config: Pick<PlatformConfig, 'LOG_LEVEL'>,
  destination?: DestinationStream,
): Logger {
  const options = {
    level: config.LOG_LEVEL,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { service: 'atrium' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // stdout is written synchronously, as Node writes it to a pipe: pino's default buffers and
  // writes asynchronously, and a process.exit() while a write was in flight could put the last
  // line (the shutdown's verdict) ahead of the one before it. At info level the service logs
  // too little for the blocking write to cost.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: true }));
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogArgs = [obj: unknown, msg?: string, ...args: unknown[]];

/**
 * A request's logger that becomes a real pino child (bound to the request id) only when the
 * request logs at an enabled level. Most requests log nothing at info, and building a child per
 * request (its bindings run through the redaction) was a measurable part of a cheap request.
 */
export class LazyChildLogger implements FastifyBaseLogger {
  private real: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.materialize().level = level;
  }

  fatal(...args: LogArgs): void {
    this.write('fatal', args);
  }
  error(...args: LogArgs): void {
    this.write('error', args);
  }
  warn(...args: LogArgs): void {
    this.write('warn', args);
  }
  info(...args: LogArgs): void {
    this.write('info', args);
  }
  debug(...args: LogArgs): void {
    this.write('debug', args);
  }
  trace(...args: LogArgs): void {
    this.write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.materialize().child(bindings, options);
  }

  private write(level: Level, args: LogArgs): void {
    if (this.real || this.parent.isLevelEnabled(level)) this.materialize()[level](...args);
  }

  private materialize(): FastifyBaseLogger {
    this.real ??= this.parent.child(this.bindings);
    return this.real;
  }
}
