import { isRedisUnavailable } from '../src';

describe('isRedisUnavailable', () => {
  it.each([
    ["OOM command not allowed when used memory > 'maxmemory'."],
    ["READONLY You can't write against a read only replica."],
    ['MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.'],
    ['LOADING Redis is loading the dataset in memory'],
    ['BUSY Redis is busy running a script.'],
    ['Connection is closed.'],
    ['Command timed out'],
    ["Stream isn't writeable and enableOfflineQueue options is false"],
  ])('%s → Redis cannot take writes now', (message) => {
    expect(isRedisUnavailable(new Error(message))).toBe(true);
  });

  it('connection error codes, the retries-exhausted error and an EXECABORT carrying a refusal', () => {
    expect(isRedisUnavailable(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }))).toBe(true);
    const retries = new Error('Reached the max retries per request limit');
    retries.name = 'MaxRetriesPerRequestError';
    expect(isRedisUnavailable(retries)).toBe(true);
    const aborted = Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), {
      previousErrors: [new Error("READONLY You can't write against a read only replica.")],
    });
    expect(isRedisUnavailable(aborted)).toBe(true);
  });

  it.each([
    ['ERR Error running script (call to f_abc): @user_script:1: user_script:1: bad argument'],
    ['job rejected: poison'],
    ['EXECABORT Transaction discarded because of previous errors.'],
  ])('%s → a problem of the job: an attempt is counted', (message) => {
    expect(isRedisUnavailable(new Error(message))).toBe(false);
  });

  it('non-errors are not classified', () => {
    expect(isRedisUnavailable('OOM')).toBe(false);
    expect(isRedisUnavailable(undefined)).toBe(false);
  });
});
