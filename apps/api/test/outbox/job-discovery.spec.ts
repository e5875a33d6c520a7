import 'reflect-metadata';
import { Injectable, Module, type Type } from '@nestjs/common';
import { ModulesContainer, NestFactory } from '@nestjs/core';
import { DeclareJobs, declaredJobsOf, defineJob, OutboxHandler } from '@listing/outbox';
import { z } from 'zod';
import { AppModule } from '../../src/app.module';
import { loadConfig } from '../../src/config/app-config';
import { loadOutboxConfig } from '../../src/config/outbox-config';
import { JobDiscovery } from '../../src/outbox/job-discovery';
import { assertTopology, loadRoles, type Roles } from '../../src/outbox/worker-topology';
import { API_DIR } from './processes';

const orphan = defineJob({ name: 'fixture.orphan', queue: 'fixture', schema: z.object({}) });
const twice = defineJob({ name: 'fixture.twice', queue: 'fixture', schema: z.object({}) });
const stray = defineJob({ name: 'fixture.stray', queue: 'fixture', schema: z.object({}) });

@Injectable()
class TwiceA {
  @OutboxHandler(twice) async run() {}
}
@Injectable()
class TwiceB {
  @OutboxHandler(twice) async run() {}
}
@Injectable()
class StrayHandler {
  @OutboxHandler(stray) async run() {}
}

/** A module that declares a job but whose handler class was left out of its providers. */
@DeclareJobs(orphan)
@Module({})
class ForgotTheHandler {}

@DeclareJobs(twice)
@Module({ providers: [TwiceA, TwiceB] })
class TwoHandlers {}

@Module({ providers: [StrayHandler] })
class UndeclaredHandler {}

async function discover(...modules: Type[]) {
  @Module({ imports: modules, providers: [JobDiscovery] })
  class Root {}
  const app = await NestFactory.createApplicationContext(Root, { logger: false, abortOnError: false });
  try {
    return app.get(JobDiscovery).registry();
  } finally {
    await app.close();
  }
}

describe('the worker discovers its jobs from the DI graph', () => {
  it('the worker role declares every production job, each with exactly one handler', async () => {
    const config = loadOutboxConfig({ NODE_ENV: 'test' });
    const app = await NestFactory.createApplicationContext(AppModule.forRole('worker', config), {
      logger: false,
      abortOnError: false,
    });
    try {
      const registry = app.get(JobDiscovery).registry();
      const jobs = registry.definitions().map((j) => `${j.queue}/${j.name}`);
      expect(jobs.sort()).toEqual([
        'ai-tasks/ai-task.run',
        'material-transfers/material-transfer.copy',
        'material-transfers/material-transfer.media-backfill',
        'media/media.process',
        'outbox-maintenance/outbox.retention',
        'publications/publication.publish',
        'publications/publication.update',
        'store-syncs/store-sync.run',
        'stores/store.check-credentials',
        'stores/store.verify-credentials',
      ]);
      for (const job of registry.definitions()) expect(registry.handler(job.name)).toBeDefined();
      // The roles file in the repository serves them all.
      const roles = loadRoles(`${API_DIR}/roles.json`);
      expect(() => assertTopology(registry.definitions(), roles, undefined)).not.toThrow();
    } finally {
      await app.close();
    }
  });

  it('the worker loads every module whose jobs the API can enqueue', async () => {
    const declaring = async (app: { get(token: typeof ModulesContainer): ModulesContainer }) =>
      [...app.get(ModulesContainer).values()]
        .filter((m) => declaredJobsOf(m.metatype).length > 0)
        .map((m) => m.metatype.name)
        .sort();
    const options = { logger: false as const, abortOnError: false };
    const api = await NestFactory.createApplicationContext(
      AppModule.forRole('api', loadConfig({ NODE_ENV: 'test' })),
      options,
    );
    const worker = await NestFactory.createApplicationContext(
      AppModule.forRole('worker', loadOutboxConfig({ NODE_ENV: 'test' })),
      options,
    );
    try {
      const inApi = await declaring(api);
      expect(inApi.length).toBeGreaterThanOrEqual(6);
      // A capability module an HTTP module imports but CAPABILITY_MODULES forgot would be
      // enqueued by the API into a queue no worker declares: its operations pending forever.
      expect(await declaring(worker)).toEqual(expect.arrayContaining(inApi));
    } finally {
      await api.close();
      await worker.close();
    }
  });

  it('refuses a declared job without a handler, naming it', async () => {
    await expect(discover(ForgotTheHandler)).rejects.toMatchObject({
      code: 'OUTBOX_HANDLER_MISSING',
      message: expect.stringContaining('fixture.orphan'),
    });
  });

  it('refuses a job with two handlers', async () => {
    await expect(discover(TwoHandlers)).rejects.toMatchObject({
      code: 'OUTBOX_HANDLER_DUPLICATE',
      message: expect.stringContaining('fixture.twice'),
    });
  });

  it('refuses a handler of a job no module declares', async () => {
    await expect(discover(UndeclaredHandler)).rejects.toMatchObject({
      code: 'OUTBOX_HANDLER_UNDEFINED_JOB',
      message: expect.stringContaining('fixture.stray (StrayHandler)'),
    });
  });
});

describe('the worker refuses a topology that strands a job', () => {
  const jobs = [
    defineJob({ name: 'a.run', queue: 'a', schema: z.object({}) }),
    defineJob({ name: 'b.run', queue: 'b', schema: z.object({}) }),
  ];
  const worker = (queues?: string) => ({
    entry: 'dist/worker.js',
    ...(queues === undefined ? {} : { env: { OUTBOX_WORKER_QUEUES: queues } }),
  });

  it('a worker role without a queue list serves every queue', () => {
    expect(() => assertTopology(jobs, { api: { entry: 'dist/main.js' }, w: worker() }, ['a'])).not.toThrow();
  });

  it('refuses a declared queue that no worker role serves, naming queue and job', () => {
    const roles: Roles = { 'worker-a': worker('a'), api: { entry: 'dist/main.js' } };
    expect(() => assertTopology(jobs, roles, ['a'])).toThrow(
      expect.objectContaining({
        code: 'WORKER_QUEUE_UNSERVED',
        queues: ['b'],
        message: expect.stringContaining('b (b.run)'),
      }),
    );
    // This process serving it does not count: the deployment's roles must.
    expect(() => assertTopology(jobs, roles, ['a', 'b'])).toThrow(
      expect.objectContaining({ code: 'WORKER_QUEUE_UNSERVED' }),
    );
    expect(() => assertTopology(jobs, { ...roles, 'worker-b': worker('b') }, ['b'])).not.toThrow();
  });

  it('refuses a queue list naming a queue no declared job uses', () => {
    expect(() => assertTopology(jobs, { w: worker() }, ['a', 'c'])).toThrow(
      expect.objectContaining({ code: 'WORKER_QUEUE_UNKNOWN', queues: ['c'] }),
    );
    expect(() => assertTopology(jobs, { w: worker('a,b,typo') }, undefined)).toThrow(
      expect.objectContaining({ code: 'WORKER_QUEUE_UNKNOWN', message: expect.stringContaining('role w') }),
    );
  });
});
