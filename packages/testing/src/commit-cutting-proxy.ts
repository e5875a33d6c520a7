import { connect, createServer, type Server, type Socket } from 'node:net';
import { viaLocalPort } from './cuttable-proxy';

/**
 * Where a commit is cut: `before-commit` drops the connection instead of forwarding the COMMIT
 * (the server rolls the transaction back); `after-commit` forwards it, lets the server answer,
 * and drops the connection before that answer reaches the client (the transaction committed, the
 * client cannot know).
 */
export type CommitCut = 'before-commit' | 'after-commit';

interface Armed {
  cut: CommitCut;
  /** Decides on the text of the transaction so far (every query and parse since BEGIN). */
  matches: (transactionText: string) => boolean;
  done: (outcome: { cut: CommitCut; transactionText: string }) => void;
}

/**
 * A TCP proxy in front of PostgreSQL that understands just enough of the wire protocol (message
 * framing, simple Query and extended Parse texts, ReadyForQuery) to cut one chosen transaction at
 * its COMMIT: the network commit ambiguity of a real deployment, made on purpose. Everything else
 * passes through byte for byte. Expects no TLS (the test servers are on loopback).
 */
export class CommitCuttingProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private armed: Armed | null = null;

  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  async open(): Promise<void> {
    const server = createServer((client) => this.relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  /**
   * Cuts the next transaction whose text `matches` at its COMMIT; resolves once it has (with
   * the transaction's text, for the test's log). One cut per arm.
   */
  arm(cut: CommitCut, matches: (transactionText: string) => boolean) {
    return new Promise<{ cut: CommitCut; transactionText: string }>((done) => {
      this.armed = { cut, matches, done };
    });
  }

  urlThrough(url: string): string {
    return viaLocalPort(url, this.port);
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private relay(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    const dropBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());

    let transactionText = '';
    // After an after-commit cut: the server's answer is read here and never relayed.
    let swallowing: ((type: number) => void) | null = null;

    const fromClient = new Framer(true, (message) => {
      const type = message[0]!;
      const text = type === 0x51 ? cString(message, 5) : type === 0x50 ? parseQuery(message) : '';
      if (type === 0x51 && /^\s*BEGIN\b/i.test(text)) transactionText = '';
      const armed = this.armed;
      if (type === 0x51 && /\bCOMMIT\s*;?\s*$/i.test(text) && armed?.matches(transactionText + text)) {
        this.armed = null;
        const outcome = { cut: armed.cut, transactionText: transactionText + text };
        if (armed.cut === 'before-commit') {
          dropBoth();
          armed.done(outcome);
          return;
        }
        swallowing = (serverType) => {
          if (serverType !== 0x5a) return; // ReadyForQuery: the COMMIT's answer is complete
          dropBoth();
          armed.done(outcome);
        };
      }
      if (text) transactionText += `${text}\n`;
      upstream.write(message);
    });
    const fromServer = new Framer(false, (message) => {
      if (swallowing) swallowing(message[0]!);
      else client.write(message);
    });
    client.on('data', (chunk: Buffer) => fromClient.push(chunk));
    upstream.on('data', (chunk: Buffer) => fromServer.push(chunk));
  }
}

/**
 * Splits a byte stream into protocol messages: [type:1][length:4, itself included][body]. The
 * client's first message (startup, or a cancel request) has no type byte.
 */
class Framer {
  private buffer: Buffer = Buffer.alloc(0);

  constructor(
    private untyped: boolean,
    private readonly onMessage: (message: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    for (;;) {
      const header = this.untyped ? 4 : 5;
      if (this.buffer.length < header) return;
      const length = this.buffer.readInt32BE(this.untyped ? 0 : 1);
      const total = (this.untyped ? 0 : 1) + length;
      if (this.buffer.length < total) return;
      const message = this.buffer.subarray(0, total);
      this.buffer = this.buffer.subarray(total);
      this.untyped = false;
      this.onMessage(message);
    }
  }
}

function cString(buffer: Buffer, from: number): string {
  const end = buffer.indexOf(0, from);
  return buffer.toString('utf8', from, end < 0 ? buffer.length : end);
}

/** Parse ('P'): statement name, then the query text. */
function parseQuery(message: Buffer): string {
  const nameEnd = message.indexOf(0, 5);
  return nameEnd < 0 ? '' : cString(message, nameEnd + 1);
}
