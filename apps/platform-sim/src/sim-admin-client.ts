import type { BillingEntry } from './ai-vendor/ai-vendor-store';
import type { FaultRule, FaultRuleInput } from './faults/fault-injector';
import type { CountersSnapshot, KeyCounters } from './state/sim-counters';

export class SimAdminError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    message: string,
  ) {
    super(message);
    this.name = 'SimAdminError';
  }
}

export interface SeedResult {
  storeExternalId: string;
  seeded: number;
  totalProducts: number;
  firstProductId: string;
  lastProductId: string;
}

/** Typed fetch client for the simulator's control plane (/admin, /health). */
export class SimAdminClient {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly options: { adminToken?: string; timeoutMs?: number } = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  async health(): Promise<boolean> {
    const response = await fetch(`${this.baseUrl}/health`, { signal: this.signal() });
    return response.ok;
  }

  counters(): Promise<CountersSnapshot> {
    return this.request('GET', '/admin/counters');
  }

  countersFor(key: string): Promise<KeyCounters> {
    return this.request('GET', `/admin/counters/${encodeURIComponent(key)}`);
  }

  async reset(): Promise<void> {
    await this.request('POST', '/admin/reset');
  }

  /** Replaces the fault configuration: one rule, or several (the first whose routes match applies). */
  async setFaults(config: FaultRuleInput | { rules: FaultRuleInput[] }): Promise<FaultRule[]> {
    return (await this.request<{ rules: FaultRule[] }>('POST', '/admin/faults', config)).rules;
  }

  async getFaults(): Promise<FaultRule[]> {
    return (await this.request<{ rules: FaultRule[] }>('GET', '/admin/faults')).rules;
  }

  async clearFaults(): Promise<void> {
    await this.request('DELETE', '/admin/faults');
  }

  seedProducts(storeExternalId: string, count: number, titlePrefix?: string): Promise<SeedResult> {
    return this.request('POST', `/admin/stores/${encodeURIComponent(storeExternalId)}/products/seed`, {
      count,
      titlePrefix,
    });
  }

  removeProduct(storeExternalId: string, productId: string): Promise<unknown> {
    return this.request(
      'DELETE',
      `/admin/stores/${encodeURIComponent(storeExternalId)}/products/${encodeURIComponent(productId)}`,
    );
  }

  setCursorLoop(storeExternalId: string, on: boolean): Promise<unknown> {
    return this.request('POST', `/admin/stores/${encodeURIComponent(storeExternalId)}/products/cursor-loop`, {
      on,
    });
  }

  async billing(): Promise<BillingEntry[]> {
    return (await this.request<{ entries: BillingEntry[] }>('GET', '/admin/billing')).entries;
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.options.adminToken) headers.authorization = `Bearer ${this.options.adminToken}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: this.signal(),
    });
    const text = await response.text();
    const parsed: unknown = text === '' ? undefined : JSON.parse(text);
    if (!response.ok) {
      throw new SimAdminError(
        response.status,
        parsed,
        `platform-sim ${method} ${path} answered ${response.status}`,
      );
    }
    return parsed as T;
  }

  private signal(): AbortSignal {
    return AbortSignal.timeout(this.options.timeoutMs ?? 10_000);
  }
}
