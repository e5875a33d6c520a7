import { createApp } from './app.factory';
import { loadConfig } from './config/app-config';

/** HTTP API process. */
async function bootstrap() {
  const config = loadConfig();
  const app = await createApp(config);
  await app.listen(config.PORT, config.HOST);
  console.log(JSON.stringify({ level: 'info', msg: 'api listening', host: config.HOST, port: config.PORT }));
}

bootstrap().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
