import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of an HTTP server that, on its first `drops` connections, forwards the
 * request and then resets the connection the moment the answer starts to come back: the server
 * ran the request, the client sees a network error ("the response was lost"). Later
 * connections pass through.
 */
export class ResponseDroppingProxy {
  /** Connections whose answer was dropped so far. */
  dropped = 0;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly target: { host: string; port: number },
    private drops = 1,
  ) {}

  async listen(): Promise<string> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      const drop = this.drops > 0;
      if (drop) this.drops--;
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => {
        if (!drop) return void client.write(chunk);
        this.dropped++;
        client.resetAndDestroy();
        upstream.destroy();
      });
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
