import { type RunningPlatformSim, SimAdminClient, startPlatformSim } from '../src/index';

export interface SimResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface SimFixture {
  sim: RunningPlatformSim;
  admin: SimAdminClient;
  call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options?: { body?: unknown; rawBody?: string; headers?: Record<string, string>; signal?: AbortSignal },
  ): Promise<SimResponse<T>>;
}

/** Starts one in-process simulator for a spec file and resets it before each test. */
export function useSim(options: { adminToken?: string } = {}): SimFixture {
  const fixture = {} as SimFixture;
  beforeAll(async () => {
    fixture.sim = await startPlatformSim({ port: 0, adminToken: options.adminToken });
    fixture.admin = new SimAdminClient(fixture.sim.url, { adminToken: options.adminToken });
    fixture.call = async (method, path, callOptions = {}) => {
      const headers: Record<string, string> = { ...callOptions.headers };
      let body: string | undefined = callOptions.rawBody;
      if (callOptions.body !== undefined) {
        body = JSON.stringify(callOptions.body);
      }
      if (body !== undefined) headers['content-type'] ??= 'application/json';
      const response = await fetch(`${fixture.sim.url}${path}`, {
        method,
        headers,
        body,
        signal: callOptions.signal ?? AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      const isJson = response.headers.get('content-type')?.includes('json') ?? false;
      return {
        status: response.status,
        headers: response.headers,
        text,
        body: isJson && text ? JSON.parse(text) : text,
      };
    };
  });
  beforeEach(async () => {
    await fixture.admin.reset();
  });
  afterAll(async () => {
    await fixture.sim?.close();
  });
  return fixture;
}

export const auth = (apiKey = 'valid-key-1') => ({ authorization: `Bearer ${apiKey}` });
