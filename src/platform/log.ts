import { type Logger, pino } from 'pino';
import type { Config } from '../config.js';

export type { Logger };

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

export function createLogger(config: Pick<Config, 'LOG_LEVEL'>): Logger {
  return pino({
    level: config.LOG_LEVEL,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { service: 'atrium' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
