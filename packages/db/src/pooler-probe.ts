import { Client, type ClientConfig } from 'pg';

/**
 * Whether connections made with `config` reach PostgreSQL through a pooler that hands one server
 * connection to several clients between their transactions (PgBouncer in transaction or statement
 * mode). Two clients, open at once, take turns asking for their backend's pid: directly, or
 * through a pooler in session mode, two open clients never share a backend. PgBouncer hands out
 * the server a client has just released first (LIFO), so through it the second client normally
 * lands on the first one's. `true` is proof; `false` only means no sharing was seen in `rounds`
 * turns (other traffic may take the released server first).
 */
export async function sharesServerConnections(config: ClientConfig, rounds = 3): Promise<boolean> {
  const clients = [new Client(config), new Client(config)];
  // A connection lost mid-probe fails its query; unheard, the 'error' event would crash the process.
  for (const client of clients) client.on('error', () => undefined);
  try {
    for (const client of clients) await client.connect();
    const seen = [new Set<number>(), new Set<number>()];
    for (let round = 0; round < rounds; round++) {
      for (const [i, client] of clients.entries()) {
        const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
        const pid = rows[0]!.pid;
        if (seen[1 - i]!.has(pid)) return true;
        seen[i]!.add(pid);
      }
    }
    return false;
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  }
}
