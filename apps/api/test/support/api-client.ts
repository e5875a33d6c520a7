import { randomUUID } from 'node:crypto';

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A tiny fetch wrapper for tests: JSON in, JSON (or problem+json) out, every response kept. */
export class ApiClient {
  /** Every response body seen, for secret scans. */
  readonly transcript: string[] = [];

  constructor(
    readonly baseUrl: string,
    public token?: string,
  ) {}

  async request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: { body?: unknown; rawBody?: string; headers?: Record<string, string>; key?: string } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (options.key) headers['idempotency-key'] = options.key;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const res = await fetch(this.baseUrl + path, { method, headers, body });
    const text = await res.text();
    this.transcript.push(text);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    if (res.status === 202) assertAcceptedLocation(path, res.headers, parsed);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  post<T = Record<string, unknown>>(
    path: string,
    body?: unknown,
    options: { key?: string; headers?: Record<string, string> } = {},
  ) {
    return this.request<T>('POST', path, { ...options, body });
  }

  get<T = Record<string, unknown>>(path: string) {
    return this.request<T>('GET', path);
  }
}

/**
 * The contract of every 202 (docs/api.md, the OpenAPI document): `{ …, operation }` and
 * `Location` naming that operation. Checked on each one the e2e suites receive.
 */
function assertAcceptedLocation(path: string, headers: Headers, body: unknown): void {
  const workspaceId = /^\/v1\/workspaces\/([^/]+)\//.exec(path)?.[1];
  const operationId = (body as { operation?: { id?: unknown } } | undefined)?.operation?.id;
  const expected = `/v1/workspaces/${workspaceId}/operations/${String(operationId)}`;
  if (!workspaceId || typeof operationId !== 'string' || headers.get('location') !== expected) {
    throw new Error(
      `202 from ${path} breaks the contract: Location ${headers.get('location')} (expected ${expected})`,
    );
  }
}

export interface RegisteredUser {
  client: ApiClient;
  userId: string;
  workspaceId: string;
  email: string;
  password: string;
  accessToken: string;
  refreshToken: string;
}

export async function registerUser(
  baseUrl: string,
  name = 'ws',
  email = `${randomUUID()}@example.test`,
): Promise<RegisteredUser> {
  const password = `pw-${randomUUID()}`;
  const client = new ApiClient(baseUrl);
  const res = await client.post<{
    user: { id: string };
    workspace: { id: string };
    accessToken: string;
    refreshToken: string;
  }>('/v1/auth/register', { email, password, workspaceName: name });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`);
  client.token = res.body.accessToken;
  return {
    client,
    userId: res.body.user.id,
    workspaceId: res.body.workspace.id,
    email,
    password,
    accessToken: res.body.accessToken,
    refreshToken: res.body.refreshToken,
  };
}
