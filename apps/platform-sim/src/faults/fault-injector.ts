import { z } from 'zod';
import { hash32 } from '../http/request-helpers';
import type { SimCounters } from '../state/sim-counters';

const rate = z.number().min(0).max(1);
const routePattern = z
  .string()
  .max(300)
  .regex(/^([A-Z]+ )?\//, 'a route is "/path-prefix", "/glob/*/path" or "METHOD /path"');

export const faultRuleSchema = z
  .object({
    errorRate: rate.default(0),
    latencyMs: z.number().int().min(0).max(120_000).default(0),
    timeoutRate: rate.default(0),
    // How long a "timed out" request is held before its socket is destroyed, unless the client gives up first.
    timeoutMs: z.number().int().min(1).max(300_000).default(30_000),
    dropResponseRate: rate.default(0),
    routes: z.array(routePattern).min(1).max(50).optional(),
    seed: z.union([z.number().int(), z.string().min(1).max(200)]).optional(),
  })
  .strict();

export const faultConfigSchema = z.object({ rules: z.array(faultRuleSchema).min(1).max(50) }).strict();

export type FaultRuleInput = z.input<typeof faultRuleSchema>;
export type FaultRule = z.output<typeof faultRuleSchema>;

export type FaultAction = 'none' | 'error' | 'timeout' | 'drop';

export interface FaultDecision {
  action: FaultAction;
  latencyMs: number;
  timeoutMs: number;
}

interface ActiveRule {
  rule: FaultRule;
  matchers: Array<(method: string, path: string) => boolean>;
  random: () => number;
}

/**
 * Decides, per provider request, whether to inject a fault. The first rule whose routes match
 * decides. With a seed each rule draws from its own PRNG in a fixed order (three draws per
 * matched request), so one client sending requests in sequence sees the same faults every run.
 * /admin and /health are never faulted: the control plane must stay reachable.
 */
export class FaultInjector {
  private rules: ActiveRule[] = [];

  constructor(private readonly counters: SimCounters) {}

  configure(rules: FaultRule[]): void {
    this.rules = rules.map((rule) => ({
      rule,
      matchers: (rule.routes ?? ['/platform/', '/ai/']).map(compileRoute),
      random: rule.seed === undefined ? Math.random : mulberry32(toSeed(rule.seed)),
    }));
  }

  clear(): void {
    this.rules = [];
  }

  current(): FaultRule[] {
    return this.rules.map((r) => r.rule);
  }

  decide(method: string, path: string): FaultDecision | null {
    if (!isProviderPath(path)) return null;
    const active = this.rules.find((r) => r.matchers.some((m) => m(method, path)));
    if (!active) return null;
    const { rule, random } = active;
    // Always draw all three so one rate's outcome never shifts the sequence of the others.
    const [errorDraw, timeoutDraw, dropDraw] = [random(), random(), random()];
    let action: FaultAction = 'none';
    if (errorDraw < rule.errorRate) action = 'error';
    else if (timeoutDraw < rule.timeoutRate) action = 'timeout';
    else if (dropDraw < rule.dropResponseRate) action = 'drop';
    if (action === 'none' && rule.latencyMs === 0) return null;
    if (rule.latencyMs > 0) this.counters.faults.delayed += 1;
    if (action === 'error') this.counters.faults.errors += 1;
    if (action === 'timeout') this.counters.faults.timeouts += 1;
    // Drops are counted when the socket is actually destroyed (after the side effect).
    return { action, latencyMs: rule.latencyMs, timeoutMs: rule.timeoutMs };
  }
}

function isProviderPath(path: string): boolean {
  return path.startsWith('/platform/') || path.startsWith('/ai/');
}

/** "/prefix" matches by prefix; a pattern with "*" must match the whole path ("*" spans any characters). */
export function compileRoute(pattern: string): (method: string, path: string) => boolean {
  const space = pattern.indexOf(' ');
  const method = space > 0 ? pattern.slice(0, space) : undefined;
  const pathPattern = space > 0 ? pattern.slice(space + 1) : pattern;
  const matchPath = pathPattern.includes('*')
    ? (
        (re: RegExp) => (p: string) =>
          re.test(p)
      )(new RegExp(`^${pathPattern.split('*').map(escapeRegExp).join('.*')}$`))
    : (p: string) => p.startsWith(pathPattern);
  return (m, p) => (method === undefined || method === m) && matchPath(p);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

function toSeed(seed: number | string): number {
  return typeof seed === 'number' ? seed >>> 0 : hash32(seed);
}

/** Small, fast, seedable PRNG; quality is ample for fault rates. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
