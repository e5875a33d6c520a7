import { CONTRACT_PATHS, OpenApiContract } from './openapi-contract';

/**
 * Loaded before every e2e test file (jest.config.ts): each response an API under test sends to
 * `fetch` is checked against the OpenAPI document that API serves at /docs/openapi.json. A
 * mismatch fails the request (fetch rejects with the list) and, should a test swallow that,
 * the test itself (afterEach). Origins that serve no document (platform-sim, the ops listeners
 * of workers and dispatchers) are not checked.
 */
const realFetch = globalThis.fetch;
const contracts = new Map<string, Promise<OpenApiContract | null>>();
const violations: string[] = [];

export class ContractViolationError extends Error {}

function contractOf(origin: string): Promise<OpenApiContract | null> {
  let contract = contracts.get(origin);
  if (!contract) {
    contract = realFetch(`${origin}/docs/openapi.json`).then(
      async (res) => (res.ok ? new OpenApiContract((await res.json()) as Record<string, unknown>) : null),
      (error: unknown) => {
        contracts.delete(origin); // down for now (a test stopped it): ask again next time
        throw error;
      },
    );
    contracts.set(origin, contract);
  }
  return contract;
}

async function checked(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) {
  const response = await realFetch(input, init);
  const request = input instanceof Request ? input : undefined;
  const url = new URL(request?.url ?? String(input));
  if (!CONTRACT_PATHS.test(url.pathname) || !['127.0.0.1', 'localhost'].includes(url.hostname)) {
    return response;
  }
  let text: string;
  let contract: OpenApiContract | null;
  try {
    [text, contract] = await Promise.all([response.clone().text(), contractOf(url.origin)]);
  } catch {
    return response; // the body broke off or the API went away: nothing to compare
  }
  if (!contract) return response;
  const found = contract.check({
    method: init?.method ?? request?.method ?? 'GET',
    path: url.pathname + url.search,
    status: response.status,
    headers: response.headers,
    text,
  });
  if (found.length) {
    violations.push(...found);
    throw new ContractViolationError(`response breaks /docs/openapi.json:\n${found.join('\n')}`);
  }
  return response;
}

globalThis.fetch = checked as typeof fetch;

afterEach(() => {
  const seen = violations.splice(0);
  if (seen.length)
    throw new ContractViolationError(`responses broke /docs/openapi.json:\n${seen.join('\n')}`);
});
