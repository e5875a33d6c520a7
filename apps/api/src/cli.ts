import { hostname, userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { Database } from '@listing/db';
import {
  DeadLetterService,
  describedError,
  OutboxRepository,
  producerRedisOptions,
  QueueProducer,
} from '@listing/outbox';
import { Redis } from 'ioredis';
import { loadOutboxConfig, outboxDatabaseUrl } from './config/outbox-config';
import { OperatorAuditRepository } from './outbox/operator-audit.repository';

const USAGE = `usage:
  node dist/cli.js stats [--json]
  node dist/cli.js dead-letters list [--queue Q] [--limit N] [--json]
  node dist/cli.js dead-letters retry <event-id> [--actor NAME]
  node dist/cli.js dead-letters retry --all [--queue Q] [--actor NAME]

Retries are recorded in audit_events (action OUTBOX_EVENT_RETRIED).

A retry runs the event again. The listing jobs (stores, publications, syncs, AI tasks, media,
transfers) react to their dead letters at once: their operation has already failed with
TASK_ABANDONED (or PUBLICATION_OUTCOME_UNKNOWN) and its resource is settled, so a retried event
finds its work settled and does nothing; the client starts such work again (or retries the
publication). Retrying is for jobs without a reaction.`;

/** Operator CLI for the outbox. Connects as outbox_agent (sql/012); cross-workspace reads go
 * through the narrow functions of sql/003, every write runs under the event's workspace. */
async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      all: { type: 'boolean', default: false },
      queue: { type: 'string' },
      limit: { type: 'string', default: '100' },
      actor: { type: 'string', default: `${userInfo().username}@${hostname()}` },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [group, command, target] = positionals;
  if (values.help || !group) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const config = loadOutboxConfig();
  const db = new Database({
    connectionString: outboxDatabaseUrl(config),
    max: 2,
    applicationName: 'outbox-cli',
  });
  const redis = new Redis(producerRedisOptions(config.REDIS_URL));
  redis.on('error', () => undefined);
  const producer = new QueueProducer(redis, config.BULLMQ_PREFIX);
  try {
    const repository = new OutboxRepository(db);
    const deadLetters = new DeadLetterService(db, producer);
    const audit = new OperatorAuditRepository(db);
    if (group === 'stats') {
      const stats = await repository.stats();
      if (values.json) console.log(JSON.stringify(stats));
      else {
        console.log(['queue', 'pending', 'oldest_pending_age_s', 'dispatching', 'dead_letter'].join('\t'));
        for (const s of stats) {
          const age = s.oldestPendingAgeMs === null ? '-' : (s.oldestPendingAgeMs / 1000).toFixed(1);
          console.log([s.queue, s.pending, age, s.dispatching, s.deadLetter].join('\t'));
        }
      }
      return 0;
    }
    if (group === 'dead-letters' && command === 'list') {
      const list = await deadLetters.list({ queue: values.queue ?? null }, Number(values.limit));
      if (values.json) console.log(JSON.stringify(list));
      else {
        for (const d of list) {
          console.log(
            [
              d.id,
              d.workspaceId,
              d.queue,
              d.type,
              d.attemptCount,
              d.updatedAt.toISOString(),
              d.lastError ?? '',
            ].join('\t'),
          );
        }
      }
      return 0;
    }
    if (group === 'dead-letters' && command === 'retry') {
      await waitForRedis(redis);
      const record = (r: Parameters<OperatorAuditRepository['deadLetterRetried']>[1]) =>
        audit.deadLetterRetried(values.actor!, r);
      if (values.all) {
        const done = await deadLetters.retryAll({ queue: values.queue ?? null }, record);
        console.log(JSON.stringify({ retried: done.map((d) => d.id) }));
        return 0;
      }
      if (!target) {
        console.error('dead-letters retry needs an event id or --all');
        return 2;
      }
      const done = await deadLetters.retry(target, record);
      console.log(JSON.stringify({ retried: [done.id] }));
      return 0;
    }
    console.error(USAGE);
    return 2;
  } finally {
    await producer.close();
    redis.disconnect();
    await db.close();
  }
}

async function waitForRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Redis is not reachable')), 5000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (thrown: unknown) => {
    const error = describedError(thrown); // never a failed query's SQL and parameters
    const code = (error as { code?: unknown }).code;
    console.error(`${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message}`);
    process.exit(1);
  },
);
