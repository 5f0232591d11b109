import { afterEach, describe, expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets, request } from '../helpers/ws-client.js';
import { dmCalls } from './dm.js';
import { worldChatCalls } from './world-chat.js';

/** Bodies that show nothing: invisible format characters, alone or around whitespace. */
const INVISIBLE = [
  ['a zero-width space', '\u200b'],
  ['zero-width joiners, a word joiner and a byte-order mark', '\u200c\u200d\u2060\ufeff'],
  ['a soft hyphen between spaces', ' \u00ad '],
  ['a Hangul filler', '\u3164'],
  ['bidirectional controls alone', '\u202e\u2066\u2069\u202c'],
] as const;

describe('the text of chat messages', () => {
  const app = useTestApp();
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());
  const dm = dmCalls(app);
  const worldChat = worldChatCalls(app);
  const user = () => registerUser(app());

  it.each([
    ['circled letters', 'what the ⓕⓤⓒⓚ', 'what the ****'],
    ['mathematical script letters', '𝓯𝓾𝓬𝓴 this', '**** this'],
    ['small capitals', 'ꜰᴜᴄᴋ off', '**** off'],
    ['letters spelled out one by one', 'oh f u c k', 'oh *******'],
    ['a combining mark on a letter', 'f\u0301uck that', '***** that'],
    ['zero-width joiners inside the word', 'f\u200du\u200dck it', '****** it'],
  ])(
    'stores a direct message disguising a word with %s masked, and answers it masked',
    async (_case, body, masked) => {
      const [alice, bob] = [await user(), await user()];
      expect(await dm.sent(alice, bob, body)).toMatchObject({ body: masked, filtered: true });
      expect((await dm.rowsOf(alice.user.id)).messages).toEqual([{ body: masked, filtered: true }]);
    },
  );

  it('masks a disguised word in world and room chat too', async () => {
    const owner = await user();
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    await worldChat.sent(owner, { worldId }, 'ⓕⓤⓒⓚ');
    await worldChat.sent(owner, { worldId, roomId: mainRoomId }, 's h i t');
    expect((await worldChat.rowsOf(worldId)).map(({ body, filtered }) => ({ body, filtered }))).toEqual([
      { body: '****', filtered: true },
      { body: '*******', filtered: true },
    ]);
  });

  it.each(INVISIBLE)(
    'refuses a direct message of only %s with 422 VALIDATION_FAILED naming body, and writes nothing',
    async (_case, body) => {
      const [alice, bob] = [await user(), await user()];
      const response = await dm.send(alice, bob.user.id, body);
      expect(response.statusCode).toBe(422);
      // The request schema refuses it, naming the field by where it came from.
      expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'body.body' }] });
      expect(await dm.rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
    },
  );

  it('refuses a dm.send frame of only zero-width characters with VALIDATION_FAILED, and writes nothing', async () => {
    const [alice, bob] = [await user(), await user()];
    const socket = await sockets.open(alice.access_token);
    const refused = await request(socket, 'dm.send', { user_id: bob.user.id, body: '\u200b\u200d' });
    expect(refused).toMatchObject({ t: 'error', code: 'VALIDATION_FAILED', errors: [{ path: 'd.body' }] });
    expect(await dm.rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
  });

  it.each(INVISIBLE)(
    'refuses a world or room chat message of only %s with 422 naming body, and writes nothing',
    async (_case, body) => {
      const owner = await user();
      const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
      for (const chat of [{ worldId }, { worldId, roomId: mainRoomId }]) {
        const response = await worldChat.send(owner, chat, body);
        expect(response.statusCode).toBe(422);
        expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'body.body' }] });
      }
      expect(await worldChat.rowsOf(worldId)).toEqual([]);
    },
  );

  it('removes bidirectional controls from a direct message before it is stored, answered and delivered', async () => {
    const [alice, bob] = [await user(), await user()];
    const bobSocket = await sockets.open(bob.access_token);
    // Shown as sent, the override would read "invoice_exe.pdf" although the file ends in .exe.
    const body = 'open invoice_\u202efdp.exe\u202c and \u2067isolated\u2069 text';
    const message = await dm.sent(alice, bob, body);
    expect(message.body).toBe('open invoice_fdp.exe and isolated text');
    expect((await bobSocket.next((frame) => frame.t === 'dm.message')).d).toEqual(message);
    expect((await dm.rowsOf(alice.user.id)).messages).toEqual([
      { body: 'open invoice_fdp.exe and isolated text', filtered: false },
    ]);
  });

  it('removes bidirectional controls from world and room chat messages', async () => {
    const owner = await user();
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    expect((await worldChat.sent(owner, { worldId }, '\u202aleft\u202c \u202bright\u202c')).body).toBe(
      'left right',
    );
    expect((await worldChat.sent(owner, { worldId, roomId: mainRoomId }, 'a\u202db\u202cc')).body).toBe(
      'abc',
    );
    expect((await worldChat.rowsOf(worldId)).map(({ body }) => body)).toEqual(['left right', 'abc']);
  });

  it('keeps joiners of emoji and Persian words and the right-to-left mark, which show as intended', async () => {
    const [alice, bob] = [await user(), await user()];
    const body = 'family 👨\u200d👩\u200d👧 می\u200cخواهم \u200fשלום';
    expect((await dm.sent(alice, bob, body)).body).toBe(body);
  });

  it('counts the length after removing bidirectional controls: 2000 characters wrapped in overrides are kept', async () => {
    const [alice, bob] = [await user(), await user()];
    const text = 'x'.repeat(2000);
    expect((await dm.sent(alice, bob, `\u202e\u202e${text}\u202c\u202c`)).body).toBe(text);
  });
});
