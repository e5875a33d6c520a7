import { readFileSync } from 'node:fs';
import type { JobDefinition } from '@listing/outbox';
import { z } from 'zod';

/**
 * apps/api/roles.json: the process roles a deployment runs (scripts/start.sh starts each one).
 * A role whose entry is the worker serves the queues of its OUTBOX_WORKER_QUEUES, or every queue
 * when it names none.
 */
/** Why the worker refuses to start on this roles file and environment. */
export class WorkerTopologyError extends Error {
  constructor(
    readonly code: 'WORKER_ROLES_INVALID' | 'WORKER_QUEUE_UNKNOWN' | 'WORKER_QUEUE_UNSERVED',
    message: string,
    readonly queues: readonly string[] = [],
  ) {
    super(message);
    this.name = 'WorkerTopologyError';
  }
}

const rolesSchema = z.record(
  z.string(),
  z.object({
    entry: z.string().min(1),
    env: z.record(z.string(), z.string()).optional(),
  }),
);
export type Roles = z.infer<typeof rolesSchema>;

const WORKER_ENTRY = /(^|\/)worker\.js$/;

export function loadRoles(path: string): Roles {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new WorkerTopologyError('WORKER_ROLES_INVALID', `cannot read the roles file ${path}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new WorkerTopologyError('WORKER_ROLES_INVALID', `${path} is not JSON`);
  }
  const parsed = rolesSchema.safeParse(json);
  if (!parsed.success) {
    throw new WorkerTopologyError(
      'WORKER_ROLES_INVALID',
      `${path}: ${parsed.error.issues.map((i) => i.message).join('; ')}`,
    );
  }
  return parsed.data;
}

/** A comma-separated queue list; undefined (every queue) when empty or absent. */
export function parseQueueList(list: string | undefined): string[] | undefined {
  const queues = (list ?? '')
    .split(',')
    .map((q) => q.trim())
    .filter(Boolean);
  return queues.length ? queues : undefined;
}

/**
 * Refuses a topology that would strand jobs or name queues nobody declares: every queue a
 * declared job travels in must be served by some worker role, and every queue a worker role
 * (or this process, `ownQueues`) names must be one a declared job uses (a typo serves nothing).
 */
export function assertTopology(
  jobs: readonly JobDefinition[],
  roles: Roles,
  ownQueues: readonly string[] | undefined,
): void {
  const declared = new Set(jobs.map((j) => j.queue));
  const workers = Object.entries(roles).filter(([, role]) => WORKER_ENTRY.test(role.entry));
  const named = new Map<string, string[]>(); // who names which queue
  let everyQueue = false;
  for (const [name, role] of workers) {
    const queues = parseQueueList(role.env?.OUTBOX_WORKER_QUEUES);
    if (!queues) everyQueue = true;
    for (const queue of queues ?? []) named.set(queue, [...(named.get(queue) ?? []), `role ${name}`]);
  }
  for (const queue of ownQueues ?? [])
    named.set(queue, [...(named.get(queue) ?? []), 'OUTBOX_WORKER_QUEUES']);

  const unknown = [...named.entries()].filter(([queue]) => !declared.has(queue));
  if (unknown.length) {
    const list = unknown.map(([queue, by]) => `${queue} (named by ${by.join(', ')})`).join('; ');
    const queues = unknown.map(([queue]) => queue);
    throw new WorkerTopologyError('WORKER_QUEUE_UNKNOWN', `queues no declared job uses: ${list}`, queues);
  }
  const unserved = everyQueue ? [] : [...declared].filter((q) => !named.has(q) || onlyOwn(named.get(q)!));
  if (unserved.length) {
    const owners = jobs.filter((j) => unserved.includes(j.queue)).map((j) => `${j.queue} (${j.name})`);
    throw new WorkerTopologyError(
      'WORKER_QUEUE_UNSERVED',
      `queues no worker role in the roles file serves: ${owners.join(', ')}`,
      unserved,
    );
  }
}

/** A queue only this process's variable names is served by no role of the deployment. */
const onlyOwn = (by: readonly string[]) => by.every((b) => b === 'OUTBOX_WORKER_QUEUES');
