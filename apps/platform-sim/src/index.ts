import type { AddressInfo } from 'node:net';
import type { SimConfig } from './config/sim-config';
import { buildSimServer } from './sim-server';
import { openSimState } from './state/open-sim-state';
import type { SimState } from './state/sim-state';

export interface StartPlatformSimOptions {
  /** 0 (the default here) picks a free port. */
  port?: number;
  host?: string;
  adminToken?: string;
  /** Base URL for AI image results; defaults to the URL each request came in on. */
  publicUrl?: string;
  logLevel?: SimConfig['LOG_LEVEL'];
  /** SQLite file keeping the state across restarts (`SIM_STATE_FILE`); default: in memory. */
  stateFile?: string;
}

export interface RunningPlatformSim {
  /** e.g. http://127.0.0.1:41234 (no trailing slash). */
  url: string;
  port: number;
  /** In-process access to the simulator's memory, for white-box assertions (readable after close). */
  state: SimState;
  close(): Promise<void>;
}

/** Starts the simulator in this process (tests); `main.ts` is the standalone process entry. */
export async function startPlatformSim(options: StartPlatformSimOptions = {}): Promise<RunningPlatformSim> {
  const state = await openSimState(options.stateFile);
  const app = buildSimServer(
    {
      LOG_LEVEL: options.logLevel ?? 'silent',
      SIM_ADMIN_TOKEN: options.adminToken,
      SIM_PUBLIC_URL: options.publicUrl,
    },
    state,
  );
  const host = options.host ?? '127.0.0.1';
  try {
    await app.listen({ port: options.port ?? 0, host });
  } catch (error) {
    await app.close(); // releases the state file
    throw error;
  }
  const { port } = app.server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    state,
    close: () => (closing ??= app.close()),
  };
}

export { buildSimServer } from './sim-server';
export { SimState } from './state/sim-state';
export { openSimState } from './state/open-sim-state';
export { loadSimConfig, ConfigError, type SimConfig } from './config/sim-config';
export { SimAdminClient, SimAdminError } from './sim-admin-client';
export type { CountersSnapshot, KeyCounters } from './state/sim-counters';
export type { Product as SimProduct } from './marketplace/marketplace-store';
export type { FaultRuleInput } from './faults/fault-injector';
