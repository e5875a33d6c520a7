import { randomUUID } from 'node:crypto';
import type { TestDatabaseHandle } from '@listing/testing';
import { freePort, spawnNode, waitUntil, type Spawned } from '../outbox/processes';
import { API_MAIN, apiEnv } from '../support/api-process';

export interface RunningApi {
  readonly process: Spawned;
  readonly url: string;
}

/**
 * Spawns dist/main.js on a free port (`apiEnv` with logs on, a pool of 6 and a 300 ms shutdown
 * grace) and waits until it answers /health/live.
 */
export async function spawnApi(
  t: TestDatabaseHandle,
  extra: Record<string, string> = {},
): Promise<RunningApi> {
  const port = await freePort();
  const process = spawnNode(
    'api',
    API_MAIN,
    apiEnv(t.info, {
      PORT: String(port),
      DATABASE_POOL_SIZE: '6',
      LOG_LEVEL: 'info',
      SHUTDOWN_GRACE_MS: '300',
      ...extra,
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(
    'api to answer /health/live',
    async () => {
      if (process.child.exitCode !== null) throw new Error(`api exited:\n${process.output()}`);
      return fetch(`${url}/health/live`).then(
        (r) => r.ok,
        () => false,
      );
    },
    30_000,
  );
  return { process, url };
}

/** GET a URL; the status, or 0 when the connection failed. */
export async function statusOf(url: string): Promise<number> {
  try {
    const res = await fetch(url);
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Parses Prometheus text: `name{labels} value` → value, for exact series lookups. */
export async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`scrape ${url}: ${res.status}`);
  const series = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

/** The value of `name` whose labels include all of `labels` (summed over the other labels). */
export function metric(
  series: Map<string, number>,
  name: string,
  labels: Record<string, string> = {},
): number {
  let total = 0;
  for (const [key, value] of series) {
    const brace = key.indexOf('{');
    const metricName = brace < 0 ? key : key.slice(0, brace);
    if (metricName !== name) continue;
    const text = brace < 0 ? '' : key.slice(brace);
    if (Object.entries(labels).every(([k, v]) => text.includes(`${k}="${v}"`))) total += value;
  }
  return total;
}

export interface Registered {
  token: string;
  refreshToken: string;
  password: string;
  workspaceId: string;
}

export async function register(url: string): Promise<Registered> {
  const password = `pw-${randomUUID()}`;
  const res = await fetch(`${url}/v1/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `${randomUUID()}@example.test`, password, workspaceName: 'ops' }),
  });
  const body = (await res.json()) as {
    accessToken: string;
    refreshToken: string;
    workspace: { id: string };
  };
  if (res.status !== 201) throw new Error(`register: ${res.status} ${JSON.stringify(body)}`);
  return {
    token: body.accessToken,
    refreshToken: body.refreshToken,
    password,
    workspaceId: body.workspace.id,
  };
}

/** POST a product draft; `key` sends Idempotency-Key. */
export async function createDraft(url: string, user: Registered, title: string, key?: string) {
  const res = await fetch(`${url}/v1/workspaces/${user.workspaceId}/product-drafts`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${user.token}`,
      ...(key ? { 'idempotency-key': key } : {}),
    },
    body: JSON.stringify({ title }),
  });
  const body = (await res.json()) as { id?: string };
  return { status: res.status, replayed: res.headers.get('idempotent-replayed') === 'true', body };
}
