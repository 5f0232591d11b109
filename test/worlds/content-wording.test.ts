import { describe, expect, it } from 'vitest';
import { restWording } from '../../src/modules/worlds/chunks.routes.js';
import type { ContentRefusal } from '../../src/modules/worlds/chunks.service.js';
import { frameWording } from '../../src/modules/worlds/worlds.frames.js';
import { AppError, ErrorCode, worded } from '../../src/platform/errors.js';

/**
 * The content refusals as the services state them (chunks.service.ts, rollback.service.ts), and as
 * each transport words them: REST as it always has (the API's messages and paths do not change),
 * frames in the protocol's fields under `d`.
 */

const refusal = (
  code: ErrorCode,
  message: string,
  reason: ContentRefusal,
  extra: Omit<AppError['extra'], 'reason'> = {},
) => new AppError(code, message, { ...extra, reason });

const asSent = (error: unknown) => {
  const { code, message, extra } = error as AppError;
  return { code, message, errors: extra.errors, details: extra.details };
};

const cases: {
  name: string;
  error: () => AppError;
  rest: { message: string; paths?: string[] };
  frame: { message: string; paths?: string[] };
}[] = [
  {
    name: 'a single write without an expected revision',
    error: () =>
      refusal(
        ErrorCode.PRECONDITION_REQUIRED,
        'A chunk write needs the revision it expects to replace, or to expect no chunk to create it.',
        { kind: 'expected_revision_missing', write: undefined },
      ),
    rest: {
      message:
        'A chunk write needs If-Match with the revision it replaces, or If-None-Match: * to create it.',
    },
    frame: {
      message: 'A chunk write needs expected_revision: the revision it replaces, or null to create it.',
    },
  },
  {
    name: 'a write of a batch without an expected revision',
    error: () =>
      refusal(
        ErrorCode.PRECONDITION_REQUIRED,
        'Each write needs expected_revision (null to create), unless the batch sets expected_content_revision.',
        { kind: 'expected_revision_missing', write: 1 },
        { details: { index: 1 } },
      ),
    rest: {
      message:
        'Each write needs expected_revision (null to create), unless the batch sets expected_content_revision.',
    },
    frame: {
      message:
        'Each write needs expected_revision (null to create), unless the batch sets expected_content_revision.',
    },
  },
  {
    name: 'a write expecting a chunk that does not exist',
    error: () =>
      refusal(
        ErrorCode.REVISION_CONFLICT,
        'The chunk does not exist; write it expecting no chunk.',
        { kind: 'chunk_absent' },
        { details: { current_revision: null, current_deleted: true, content_revision: 4 } },
      ),
    rest: { message: 'The chunk does not exist; write it with If-None-Match: *.' },
    frame: { message: 'The chunk does not exist; write it with expected_revision null.' },
  },
  {
    name: "a single write's refused payload",
    error: () =>
      refusal(
        ErrorCode.PAYLOAD_TOO_LARGE,
        'A chunk payload is at most 1048576 bytes.',
        { kind: 'payload_refused', write: undefined },
        { errors: [{ path: 'payload', message: 'is 1048577 bytes' }] },
      ),
    rest: { message: 'A chunk payload is at most 1048576 bytes.', paths: ['payload'] },
    frame: { message: 'A chunk payload is at most 1048576 bytes.', paths: ['d.payload'] },
  },
  {
    name: "a batch write's refused payload",
    error: () =>
      refusal(
        ErrorCode.INVALID_CHUNK,
        'The chunk payload does not decode: truncated',
        { kind: 'payload_refused', write: 2 },
        { errors: [{ path: 'writes.2.payload', message: 'truncated' }], details: { offset: 3, index: 2 } },
      ),
    rest: { message: 'The chunk payload does not decode: truncated', paths: ['body.writes.2.payload'] },
    frame: { message: 'The chunk payload does not decode: truncated', paths: ['d.writes.2.payload'] },
  },
  {
    name: 'a batch writing one chunk twice',
    error: () =>
      refusal(
        ErrorCode.VALIDATION_FAILED,
        'writes.2: writes the same chunk as an earlier write',
        { kind: 'chunk_repeated', write: 2 },
        { errors: [{ path: 'writes.2', message: 'writes the same chunk as an earlier write' }] },
      ),
    rest: { message: 'body.writes.2: writes the same chunk as an earlier write', paths: ['body.writes.2'] },
    frame: { message: 'd.writes.2: writes the same chunk as an earlier write', paths: ['d.writes.2'] },
  },
  {
    name: 'a rollback to a revision after the content revision',
    error: () =>
      refusal(
        ErrorCode.VALIDATION_FAILED,
        'revision: the world is at 7',
        { kind: 'target_after_content', contentRevision: 7 },
        { errors: [{ path: 'revision', message: 'is after the content revision 7' }] },
      ),
    rest: { message: 'body.revision: the world is at 7', paths: ['body.revision'] },
    frame: { message: 'd.revision: the world is at 7', paths: ['d.revision'] },
  },
];

describe('content refusals in the words of each transport', () => {
  for (const transport of ['rest', 'frame'] as const) {
    const wording = transport === 'rest' ? restWording : frameWording;
    it.each(cases.map((c) => [c.name, c] as const))(`${transport}: %s`, (_name, c) => {
      const stated = c.error();
      const sent = asSent(worded(stated, wording));
      const expected = c[transport];
      expect(sent.code).toBe(stated.code);
      expect(sent.message).toBe(expected.message);
      // The facts stay: the field messages, and the details a client reads (index, revisions).
      expect(sent.details).toEqual(stated.extra.details);
      expect(sent.errors?.map((e) => e.path)).toEqual(expected.paths);
      expect(sent.errors?.map((e) => e.message)).toEqual(stated.extra.errors?.map((e) => e.message));
    });
  }

  it('leaves errors without a reason, and anything not an AppError, as they are', () => {
    const plain = new AppError(ErrorCode.NOT_FOUND, 'No such chunk.');
    expect(worded(plain, restWording)).toBe(plain);
    expect(worded(plain, frameWording)).toBe(plain);
    const crash = new Error('boom');
    expect(worded(crash, frameWording)).toBe(crash);
  });
});
