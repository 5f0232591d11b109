import { describe, expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { moderationCalls } from './moderation.js';

describe('the report rate', () => {
  const app = useTestApp({ REPORT_RATE_LIMIT_COUNT: 3, REPORT_RATE_LIMIT_WINDOW_SECONDS: 60 });
  const { report, reported, directMessage, reportRowsBy } = moderationCalls(app);

  it('answers 429 RATE_LIMITED with Retry-After past REPORT_RATE_LIMIT_COUNT a window, filing nothing', async () => {
    const [reporter, sender, other] = await Promise.all([
      registerUser(app()),
      registerUser(app()),
      registerUser(app()),
    ]);
    const messages = [];
    for (let i = 0; i < 5; i++) messages.push(await directMessage(sender, reporter, `message ${i}`));
    for (const id of messages.slice(0, 3)) await reported(reporter, id);
    const refused = await report(reporter, messages[3] as string);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await reportRowsBy(reporter)).toHaveLength(3);
    // Another user's reports are their own.
    const theirs = await directMessage(sender, other);
    await reported(other, theirs);
  });

  it('charges reports of messages that do not exist too, so the limit also bounds probing', async () => {
    const [reporter] = await Promise.all([registerUser(app())]);
    for (let i = 0; i < 3; i++)
      expect((await report(reporter, '0190a1b2-0000-7000-8000-000000000000')).statusCode).toBe(404);
    expect((await report(reporter, '0190a1b2-0000-7000-8000-000000000000')).statusCode).toBe(429);
  });
});
