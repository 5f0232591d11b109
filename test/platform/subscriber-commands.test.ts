import { describe, expect, it } from 'vitest';
import { type SubscriberCommand, SubscriberCommands } from '../../src/platform/kv/subscriber-commands.js';

/** Records the commands as the subscriber connection would be given them; `failing` ones reject. */
function recorder(failing: SubscriberCommand | undefined = undefined) {
  const sent: { command: SubscriberCommand; channels: string[] }[] = [];
  const commands = new SubscriberCommands(async (command, channels) => {
    sent.push({ command, channels });
    if (command === failing) throw new Error(`${command} refused`);
  });
  return { sent, commands };
}

describe('SubscriberCommands', () => {
  it('sends one turn of requests at the next check phase, consecutive ones of a kind together, in order', async () => {
    const { sent, commands } = recorder();
    const settled = [
      commands.add('subscribe', 'a'),
      commands.add('subscribe', 'b'),
      commands.add('unsubscribe', 'a'),
      commands.add('subscribe', 'a'),
      commands.add('unsubscribe', 'c'),
    ];
    expect(sent).toEqual([]);
    await Promise.all(settled);
    expect(sent).toEqual([
      { command: 'subscribe', channels: ['a', 'b'] },
      { command: 'unsubscribe', channels: ['a'] },
      { command: 'subscribe', channels: ['a'] },
      { command: 'unsubscribe', channels: ['c'] },
    ]);
  });

  it('puts at most 1,000 channels in one command', async () => {
    const { sent, commands } = recorder();
    const names = Array.from({ length: 2_500 }, (_, i) => `c${i}`);
    await Promise.all(names.map((name) => commands.add('unsubscribe', name)));
    expect(sent.map((command) => command.channels.length)).toEqual([1_000, 1_000, 500]);
    expect(sent.flatMap((command) => command.channels)).toEqual(names);
  });

  it('rejects the callers of a command that failed, and only theirs', async () => {
    const { commands } = recorder('subscribe');
    const left = commands.add('unsubscribe', 'a');
    const joined = commands.add('subscribe', 'b');
    await expect(left).resolves.toBeUndefined();
    await expect(joined).rejects.toThrow('subscribe refused');
  });
});
