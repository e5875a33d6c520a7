/** The little logging the outbox needs; processes pass a JSON-lines logger, tests a silent one. */
export interface OutboxLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: OutboxLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** One JSON object per line on stdout (info) or stderr (warn, error). */
export function jsonLogger(base: Record<string, unknown> = {}): OutboxLogger {
  const write =
    (level: string, stream: NodeJS.WriteStream) => (msg: string, fields?: Record<string, unknown>) =>
      stream.write(`${JSON.stringify({ time: new Date().toISOString(), level, ...base, msg, ...fields })}\n`);
  return {
    info: write('info', process.stdout),
    warn: write('warn', process.stderr),
    error: write('error', process.stderr),
  };
}
