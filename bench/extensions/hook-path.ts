import { resolve } from 'node:path';
import { pino } from 'pino';
import { Registry as MetricsRegistry } from 'prom-client';
import { dmSend } from '../../protocol/chat.js';
import type { Operation } from '../../protocol/operation.js';
import { usersMe } from '../../protocol/users.js';
import { CallerDirectory } from '../../src/modules/extensions/callers.js';
import { ExtensionCalls } from '../../src/modules/extensions/calls.js';
import type { CtxServices } from '../../src/modules/extensions/extension-ctx.js';
import { ExtensionsService } from '../../src/modules/extensions/extensions.service.js';
import { loadExtensions } from '../../src/modules/extensions/loader.js';
import { Registry } from '../../src/modules/extensions/registry.js';
import type { Ctx } from '../../src/platform/context.js';
import { newId } from '../../src/platform/ids.js';
import { OperationHooks, type ServiceHandler } from '../../src/platform/operation-hooks.js';

/**
 * The hook path's own CPU per call, in process: `npx tsx bench/extensions/hook-path.ts`. The
 * extensions bench compares services in separate processes, whose CPU per call lands further
 * apart on this machine than the 2% and 10% it is held to; here one stand-in service function is
 * called bare and through OperationHooks.around with the real ExtensionsService and the bench's
 * no-op before hook (bench/extensions/noop-before.mjs), in alternating rounds, so the difference
 * is what the hook path adds to a call, to set beside the operation's own CPU per call. Prints
 * the median of the rounds, in µs of CPU time (user + system) per call.
 */

const ROUNDS = 15;
const CALLS = 20_000;

const registry = new Registry();
await loadExtensions([resolve('bench/extensions/noop-before.mjs')], registry);
const extensions = new ExtensionsService({
  registry,
  calls: new ExtensionCalls(new MetricsRegistry(), 2000),
  // A no-op hook calls no ctx service.
  services: {} as CtxServices,
  // Usernames are read once per account and cached; the cache is what a hooked call meets.
  callers: new CallerDirectory({} as Ctx['data'], async () => 'bench_user'),
});
const hooks = new OperationHooks();
for (const op of [usersMe, dmSend])
  hooks.set(op.name, extensions.hookOf(op) as NonNullable<ReturnType<typeof extensions.hookOf>>);

const ctx = {
  data: {},
  user: { id: newId(), sessionId: newId(), roles: ['user'] },
  service: null,
  log: pino({ level: 'silent' }),
  now: () => new Date(),
  ip: '127.0.0.1',
} as unknown as Ctx;
const serviceFunction: ServiceHandler = async () => ({ ok: true });

async function cpuPerCall(handler: ServiceHandler, input: unknown): Promise<number> {
  const started = process.cpuUsage();
  for (let call = 0; call < CALLS; call++) await handler(ctx, input as never);
  const { user, system } = process.cpuUsage(started);
  return (user + system) / CALLS;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] as number;

const rows: string[] = [];
for (const [op, input] of [
  [usersMe, undefined],
  [dmSend, { user_id: newId(), body: 'Are you coming to the plaza tonight? Bring the new hat.' }],
] as [Operation, unknown][]) {
  const unhooked = new OperationHooks().around(op, serviceFunction);
  if (unhooked !== serviceFunction)
    throw new Error('an operation with no hook is expected to be served by its function itself');
  const hooked = hooks.around(op, serviceFunction);
  const bare: number[] = [];
  const withHook: number[] = [];
  await cpuPerCall(hooked, input); // warm-up of both paths
  await cpuPerCall(serviceFunction, input);
  for (let round = 0; round < ROUNDS; round++) {
    bare.push(await cpuPerCall(serviceFunction, input));
    withHook.push(await cpuPerCall(hooked, input));
  }
  const [b, h] = [median(bare), median(withHook)];
  rows.push(`| \`${op.name}\` | ${b.toFixed(2)} | ${h.toFixed(2)} | ${(h - b).toFixed(2)} |`);
}
console.log(
  [
    `| operation | no hook: the service function itself, µs CPU/call | one no-op before hook, µs | the hook path's cost, µs (median of ${ROUNDS} rounds of ${CALLS.toLocaleString('en-US')} calls) |`,
    '|---|---|---|---|',
    ...rows,
  ].join('\n'),
);
