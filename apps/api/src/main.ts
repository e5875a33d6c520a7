import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import { APP_CONFIG, type AppConfig } from './config/app-config';

/** HTTP API process. */
async function bootstrap() {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), {
    bufferLogs: false,
  });
  app.enableShutdownHooks();
  const config = app.get<AppConfig>(APP_CONFIG);
  await app.listen(config.PORT, config.HOST);
  console.log(JSON.stringify({ level: 'info', msg: 'api listening', host: config.HOST, port: config.PORT }));
}

bootstrap().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
