import { ConnectionLosses } from '../src/connection-losses';

describe('ConnectionLosses', () => {
  it('allows `limit` put-backs per job, then refuses until the job is forgotten', () => {
    const losses = new ConnectionLosses(2);
    expect([1, 2, 3, 4].map(() => losses.allowPutBack('q:a'))).toEqual([true, true, false, false]);
    expect(losses.allowPutBack('q:b')).toBe(true); // per job
    losses.forget('q:a');
    expect(losses.allowPutBack('q:a')).toBe(true);
  });

  it('keeps at most `capacity` jobs, dropping the one least recently seen', () => {
    const losses = new ConnectionLosses(1, 2);
    losses.allowPutBack('q:a');
    losses.allowPutBack('q:b');
    expect(losses.allowPutBack('q:a')).toBe(false); // a is now the newest
    losses.allowPutBack('q:c'); // over capacity: b goes
    expect(losses.allowPutBack('q:a')).toBe(false);
    expect(losses.allowPutBack('q:b')).toBe(true); // forgotten, so counted afresh
  });
});
