import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../protocol/operations.js';
import { PROCESS_TEST_TIMEOUT_MS } from './helpers/service-process.js';

const run = promisify(execFile);

interface Document {
  openapi: string;
  paths: Record<string, Record<string, { operationId?: string }>>;
}

/** `atrium openapi` as a child process, with its own TMPDIR so what it leaves there can be seen. */
function atrium(args: string[], tempDir: string) {
  return run(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    // The document comes from the embedded defaults, whatever the environment configures.
    env: { ...process.env, TMPDIR: tempDir, DATABASE_URL: 'postgres://unused.invalid/atrium' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 90_000,
  });
}

/** operationId -> "METHOD /path" of every operation in a document. */
function operationsOf(document: Document): Map<string, string> {
  const found = new Map<string, string>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op.operationId) found.set(op.operationId, `${method.toUpperCase()} ${path}`);
    }
  }
  return found;
}

describe('atrium openapi', () => {
  let dir: string;
  let tempDir: string;
  let stdoutText: string;
  let fromStdout: Document;
  let fromFile: Document;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'atrium-openapi-test-'));
    tempDir = join(dir, 'tmp');
    await mkdir(tempDir);
    const outFile = join(dir, 'nested', 'openapi.json');
    const [stdout] = await Promise.all([
      atrium(['openapi'], tempDir),
      atrium(['openapi', '--out', outFile], tempDir),
    ]);
    stdoutText = stdout.stdout;
    fromStdout = JSON.parse(stdoutText);
    fromFile = JSON.parse(await readFile(outFile, 'utf8'));
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes a valid OpenAPI 3.1 document to stdout, and the same one to --out', async () => {
    expect(fromStdout.openapi).toBe('3.1.0');
    const result = await new Validator().validate(JSON.parse(stdoutText));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(fromFile).toEqual(fromStdout);
  });

  it('lists every REST operation of the protocol under its operationId, plus the hand-written routes', () => {
    const found = operationsOf(fromStdout);
    for (const op of Object.values(operations)) {
      if (!op.rest) continue;
      const path = op.rest.path.replace(/:(\w+)/g, '{$1}');
      expect(found.get(op.name), op.name).toBe(`${op.rest.method} ${path}`);
    }
    expect(found.get('health.live')).toBe('GET /healthz');
    expect(found.get('health.ready')).toBe('GET /readyz');
    expect(found.get('health.metrics')).toBe('GET /metrics');
    expect(found.get('auth.jwks')).toBe('GET /.well-known/jwks.json');
  });

  it('leaves no files behind in the temporary directory', async () => {
    // tsx keeps its compile cache in the temporary directory; that is not the command's.
    const left = (await readdir(tempDir)).filter((name) => !name.startsWith('tsx-'));
    expect(left).toEqual([]);
  });

  it('answers a usage mistake with exit code 2', async () => {
    const failed = await atrium(['openapi', '--output'], tempDir).then(
      () => undefined,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain('Usage: atrium openapi [--out <file>]');
  });
});
