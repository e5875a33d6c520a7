import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a server (PostgreSQL, say) that a test can cut and restore, like
 * stopping and starting the server without touching the shared one other suites use.
 */
export class CuttableProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(
    readonly port: number,
    private target: { host: string; port: number },
  ) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  /** Listening (open() succeeded and no cut since). */
  get isOpen(): boolean {
    return this.server !== null;
  }

  /** Like a stopped server: new connections refused, established ones dropped. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * Points new connections at another server and drops the established ones, like a virtual IP
   * moving to a promoted replica. Opens the proxy again if it was cut.
   */
  async retarget(target: { host: string; port: number }): Promise<void> {
    await this.cut();
    this.target = target;
    await this.open();
  }

  /** `url` with its host and port replaced by the proxy's. */
  urlThrough(url: string): string {
    return viaLocalPort(url, this.port);
  }
}

/** `url` with its host and port replaced by 127.0.0.1:`port` (a proxy or pooler in front). */
export function viaLocalPort(url: string, port: number | string): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

/** A free TCP port on 127.0.0.1 (closed again before it is returned). */
export async function freeTcpPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
