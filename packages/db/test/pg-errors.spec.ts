import { isDatabaseUnavailable, pgErrorCode } from '../src';

const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
/** As Drizzle wraps a driver error: its own message, the pg error as `cause`. */
const wrapped = (cause: Error) => Object.assign(new Error('Failed query: insert …'), { cause });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['connection refused', coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['connection reset', coded('read ECONNRESET', 'ECONNRESET')],
    ['server shutting down (57P01)', coded('terminating connection due to administrator command', '57P01')],
    ['server starting (57P03)', coded('the database system is starting up', '57P03')],
    ['too many connections (53300)', coded('sorry, too many clients already', '53300')],
    ['connection exception class 08', coded('connection failure', '08006')],
    ['dropped connection (no code)', new Error('Connection terminated unexpectedly')],
    ['pool connect timeout (no code)', new Error('timeout exceeded when trying to connect')],
    ['wrapped by Drizzle', wrapped(coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'))],
  ])('%s: unavailable', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['unique violation', coded('duplicate key value', '23505')],
    ['lock not available', coded('could not obtain lock', '55P03')],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['not an error', 'ECONNREFUSED'],
    ['nothing', undefined],
  ])('%s: not unavailable', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it('pgErrorCode still reads the SQLSTATE through the wrapper', () => {
    expect(pgErrorCode(wrapped(coded('duplicate key value', '23505')))).toBe('23505');
  });
});
