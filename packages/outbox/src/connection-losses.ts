/**
 * Per job, how often this process put it back uncounted because one of its own PostgreSQL
 * connections failed during the try while the database answered afterwards
 * (OutboxWorkerRuntime.databaseDown). An outage that ended during the try looks exactly like a job
 * whose own work ends its connection every time (a server timeout it trips, a backend an operator
 * terminates): only the count tells them apart, so the first gets a few put-backs and the second
 * counts its attempts after those, instead of waiting in its queue forever.
 *
 * In memory and bounded (the oldest job goes first): a job that moves between workers can get
 * `limit` put-backs from each of them, which still ends.
 */
export class ConnectionLosses {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly capacity = 10_000,
  ) {}

  /** Records one more loss of the job's; false once it has had `limit` put-backs here already. */
  allowPutBack(job: string): boolean {
    const n = (this.counts.get(job) ?? 0) + 1;
    this.counts.delete(job); // re-inserted as the newest
    this.counts.set(job, n);
    if (this.counts.size > this.capacity) this.counts.delete(this.counts.keys().next().value!);
    return n <= this.limit;
  }

  /** The job left this process for good (completed, or failed without a retry). */
  forget(job: string): void {
    this.counts.delete(job);
  }
}
