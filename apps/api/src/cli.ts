import 'reflect-metadata';
import { hostname, userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { NestFactory } from '@nestjs/core';
import { describedError } from '@listing/outbox';
import { AppModule } from './app.module';
import { loadOutboxConfig } from './config/outbox-config';
import { OutboxCli } from './outbox/outbox-cli.service';

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

/** Operator CLI for the outbox: the CLI role of the composition root (see OutboxCli). */
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
  const app = await NestFactory.createApplicationContext(AppModule.forRole('cli', loadOutboxConfig()), {
    logger: false,
    abortOnError: false,
  });
  let code: number;
  try {
    code = await run(app.get(OutboxCli), group, command, target, values);
  } finally {
    // A retry that committed must not read as failed because a connection closed badly.
    await app.close().catch((error: unknown) => console.error(`closing: ${(error as Error).message}`));
  }
  return code;
}

async function run(
  cli: OutboxCli,
  group: string,
  command: string | undefined,
  target: string | undefined,
  values: { json: boolean; all: boolean; queue?: string; limit: string; actor: string },
): Promise<number> {
  const queue = values.queue ?? null;
  if (group === 'stats') {
    const stats = await cli.stats();
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
    const list = await cli.listDeadLetters(queue, Number(values.limit));
    if (values.json) console.log(JSON.stringify(list));
    else {
      for (const d of list) {
        const fields = [d.id, d.workspaceId, d.queue, d.type, d.attemptCount, d.updatedAt.toISOString()];
        console.log([...fields, d.lastError ?? ''].join('\t'));
      }
    }
    return 0;
  }
  if (group === 'dead-letters' && command === 'retry') {
    if (!values.all && !target) {
      console.error('dead-letters retry needs an event id or --all');
      return 2;
    }
    const retried = values.all
      ? await cli.retryAll(queue, values.actor)
      : await cli.retry(target!, values.actor);
    console.log(JSON.stringify({ retried }));
    return 0;
  }
  console.error(USAGE);
  return 2;
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
