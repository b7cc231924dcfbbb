import { describe, expect, it } from 'vitest';
import { ApiError } from './client.ts';
import { ApplyCause, causeOfError, isTransientCause } from './causes.ts';

const api = (status: number, reason: string) => new ApiError({ status, reason, message: `${reason}: from the server` });

describe('causeOfError', () => {
  it.each([
    [api(403, 'Forbidden'), ApplyCause.Forbidden],
    [api(401, 'Unauthorized'), ApplyCause.Forbidden],
    [api(409, 'Conflict'), ApplyCause.FieldConflict],
    [api(404, 'NotFound'), ApplyCause.NotFound],
    [api(422, 'Invalid'), ApplyCause.Invalid],
    [api(400, 'BadRequest'), ApplyCause.Invalid],
    [api(0, 'Timeout'), ApplyCause.Timeout],
    [api(504, 'Timeout'), ApplyCause.Timeout],
    [api(500, 'ServerTimeout'), ApplyCause.Timeout],
    [api(0, 'TransportError'), ApplyCause.Transport],
    [api(0, 'Fenced'), ApplyCause.Fenced],
    [api(500, 'InternalError'), ApplyCause.ServerError],
    [api(429, 'TooManyRequests'), ApplyCause.ServerError],
    [new Error('anything else'), ApplyCause.ServerError],
  ])('given %s, then the cause is %s', (error, cause) => {
    expect(causeOfError(error)).toBe(cause);
  });

  it('decides from the status and reason, never from the words: a 422 whose message says "forbidden" is Invalid', () => {
    const error = new ApiError({
      status: 422,
      reason: 'Invalid',
      message: 'spec: Forbidden: updates to statefulset spec for fields other than replicas are forbidden',
    });
    expect(causeOfError(error)).toBe(ApplyCause.Invalid);
  });
});

describe('isTransientCause', () => {
  it('marks what a person must change as not transient, and what time may fix as transient', () => {
    const notTransient = Object.values(ApplyCause).filter((cause) => !isTransientCause(cause));
    expect(notTransient.sort()).toEqual(['Conflict', 'Drifted', 'Forbidden', 'Kept', 'Left', 'NotOwned', 'Orphaned']);
  });
});
