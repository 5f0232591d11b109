import { encode } from '@msgpack/msgpack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FRAME_DEPTH } from '../../src/platform/gateway/frame-decoder.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { authedSocket, TestSocket } from '../helpers/ws-client.js';

/** The frame from the report: 9,000 nested array16 headers declaring 65,535 items each (27 KB). */
const ARRAY16_BOMB = new Uint8Array(Array(9000).fill([0xdc, 0xff, 0xff]).flat());

const memoryInUse = () => {
  const { heapUsed, external, arrayBuffers } = process.memoryUsage();
  return heapUsed + external + arrayBuffers;
};

describe('gateway against hostile msgpack', () => {
  // The default frame limit (64 KiB), so the 27 KB bomb reaches the decoder.
  const app = useTestApp();
  let anonymous: TestSocket;
  let signedIn: TestSocket;

  beforeAll(async () => {
    anonymous = await TestSocket.connect(app().wsUrl);
    signedIn = await authedSocket(app().wsUrl, (await registerUser(app())).access_token);
  });

  afterAll(async () => {
    anonymous?.close();
    signedIn?.close();
  });

  const expectPong = async (socket: TestSocket) => {
    socket.sendFrame({ t: 'ping', id: 4242 });
    await socket.next((f) => f.t === 'pong' && f.id === 4242);
  };

  it.each([
    ['before auth', () => anonymous],
    ['after auth', () => signedIn],
  ])(
    'answers the nested array16 bomb %s with MALFORMED_REQUEST while memory stays flat',
    async (_when, socket) => {
      const before = memoryInUse();
      for (let i = 0; i < 20; i++) {
        socket().sendRaw(ARRAY16_BOMB);
        const error = await socket().next((f) => f.t === 'error');
        expect(error.code).toBe('MALFORMED_REQUEST');
        expect(error.message).toMatch(/at byte 0: a header declares 65535/);
      }
      // Twenty bombs once cost gigabytes; refused up front they cost next to nothing.
      expect(memoryInUse() - before).toBeLessThan(32 * 1024 * 1024);
      await expectPong(socket());
    },
  );

  it.each([
    ['array32 declaring 2^32-1 items', [0x81, 0xa1, 0x64, 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0]],
    ['map32 declaring 2^32-1 entries', [0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 0x74]],
    ['str32 declaring 4 GiB', [0x81, 0xa1, 0x74, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x70]],
    ['bin32 declaring 4 GiB', [0x81, 0xa1, 0x64, 0xc6, 0xff, 0xff, 0xff, 0xff, 0x00]],
    ['a frame cut inside a string', [0x82, 0xa1, 0x74, 0xa4, 0x70, 0x69]],
  ])('answers %s with MALFORMED_REQUEST naming the byte offset', async (_name, frame) => {
    signedIn.sendRaw(new Uint8Array(frame));
    const error = await signedIn.next((f) => f.t === 'error');
    expect(error.code).toBe('MALFORMED_REQUEST');
    expect(error.message).toMatch(/at byte \d+/);
    await expectPong(signedIn);
  });

  const nestedPayload = (levels: number) => Array.from({ length: levels - 1 }).reduce((inner) => [inner], []);

  it('decodes a payload nested to the depth limit and refuses one level deeper', async () => {
    // The envelope map is the first level, so the payload may nest MAX_FRAME_DEPTH - 1 levels.
    signedIn.sendRaw(encode({ t: 'presence.query', id: 1, d: nestedPayload(MAX_FRAME_DEPTH - 1) }));
    expect((await signedIn.next((f) => f.id === 1)).code).toBe('VALIDATION_FAILED');
    signedIn.sendRaw(encode({ t: 'presence.query', id: 2, d: nestedPayload(MAX_FRAME_DEPTH) }));
    const refused = await signedIn.next((f) => f.t === 'error' && f.id === undefined);
    expect(refused.code).toBe('MALFORMED_REQUEST');
    expect(refused.message).toMatch(/nest more than/);
  });

  it('refuses 2,500 nested arrays (5 KB) without echoing anything but the error', async () => {
    // Built by hand: msgpack's own encoder recurses and cannot write this frame.
    const envelope = encode({ t: 'presence.status', id: 3, d: 0 });
    const nested = [...Array(2499).fill(0x91), 0x90];
    signedIn.sendRaw(new Uint8Array([...envelope.subarray(0, -1), ...nested]));
    const refused = await signedIn.next((f) => f.t === 'error');
    expect(refused).toMatchObject({ code: 'MALFORMED_REQUEST' });
    expect(refused.id).toBeUndefined();
    await expectPong(signedIn);
  });

  it.each([
    ['above uint32', 2 ** 32],
    ['at 2^53', 2 ** 53],
  ])('refuses a request id %s without echoing it', async (_name, id) => {
    signedIn.sendFrame({ t: 'no.such.type', id });
    const error = await signedIn.next((f) => f.t === 'error');
    expect(error.code).toBe('MALFORMED_REQUEST');
    expect(error).not.toHaveProperty('id');
  });

  it('echoes the largest uint32 request id', async () => {
    signedIn.sendFrame({ t: 'no.such.type', id: 2 ** 32 - 1 });
    const error = await signedIn.next((f) => f.t === 'error');
    expect(error).toMatchObject({ code: 'UNKNOWN_FRAME_TYPE', id: 2 ** 32 - 1 });
  });
});
