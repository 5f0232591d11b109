import { expect } from 'vitest';
import { AtriumError } from '../../protocol/socket.js';

/** Resolves with the AtriumError `promise` rejects with, failing when it resolves or rejects otherwise. */
export async function rejectionOf(promise: Promise<unknown>): Promise<AtriumError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AtriumError);
    return error as AtriumError;
  }
  throw new Error('expected the promise to reject');
}

/** Resolves with the error `promise` rejects with, failing when it resolves. */
export async function failureOf<Fields extends object = { code?: string }>(
  promise: Promise<unknown>,
): Promise<Error & Fields> {
  try {
    await promise;
  } catch (error) {
    return error as Error & Fields;
  }
  throw new Error('expected a rejection');
}
