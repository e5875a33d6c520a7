import { type DynamicModule, Module, type Provider, type Type } from '@nestjs/common';
import { APP_CONFIG, loadPlatformConfig, PLATFORM_CONFIG, type AppConfig } from './config/app-config';
import { OUTBOX_CONFIG, outboxDatabaseUrl, type OutboxConfig } from './config/outbox-config';
import { redisTarget } from './config/redis-config';
import { InfrastructureModule } from './infrastructure/infrastructure.module';
import { AiTasksHttpModule } from './modules/ai-tasks/ai-tasks-http.module';
import { AiTasksModule } from './modules/ai-tasks/ai-tasks.module';
import { AuditHttpModule } from './modules/audit/audit-http.module';
import { AuthModule } from './modules/auth/auth.module';
import { HealthModule } from './modules/health/health.module';
import { IdempotencyModule } from './modules/idempotency/idempotency.module';
import { MaterialTransfersHttpModule } from './modules/material-transfers/material-transfers-http.module';
import { MaterialTransfersModule } from './modules/material-transfers/material-transfers.module';
import { MediaHttpModule } from './modules/media/media-http.module';
import { MediaModule } from './modules/media/media.module';
import { OperationsHttpModule } from './modules/operations/operations-http.module';
import { ProductDraftsModule } from './modules/product-drafts/product-drafts.module';
import { PublicationsHttpModule } from './modules/publications/publications-http.module';
import { PublicationsModule } from './modules/publications/publications.module';
import { StoreSyncsHttpModule } from './modules/store-syncs/store-syncs-http.module';
import { StoreSyncsModule } from './modules/store-syncs/store-syncs.module';
import { StoresHttpModule } from './modules/stores/stores-http.module';
import { StoresModule } from './modules/stores/stores.module';
import { WorkspacesModule } from './modules/workspaces/workspaces.module';
import { WorkspacesService } from './modules/workspaces/workspaces.service';
import { CliModule } from './outbox/cli.module';
import { DispatcherModule } from './outbox/dispatcher.module';
import { OUTBOX_LOGGER } from './outbox/outbox-roles.tokens';
import { TestEffectJobModule } from './outbox/test-effect.job';
import { WorkerModule } from './outbox/worker.module';
import { createLogger, logLevelFromEnv, outboxLogger } from './ops/logger.factory';
import { OpsModule } from './ops/ops.module';

export type ProcessRole = 'api' | 'worker' | 'dispatcher' | 'cli';

/**
 * The capabilities with jobs: their modules hold the repositories, the services jobs use and the
 * job classes, and declare their jobs (@DeclareJobs). The API and the worker both load them; the
 * worker discovers the jobs and handlers in them.
 */
const CAPABILITY_MODULES: Type[] = [
  StoresModule,
  PublicationsModule,
  StoreSyncsModule,
  AiTasksModule,
  MediaModule,
  MaterialTransfersModule,
];

/** The API's routes: controllers with the services behind them (API role only). */
const HTTP_MODULES: Array<Type | DynamicModule> = [
  HealthModule,
  AuthModule.forRoot({ module: WorkspacesModule, provider: WorkspacesService }),
  WorkspacesModule,
  ProductDraftsModule,
  OperationsHttpModule,
  StoresHttpModule,
  PublicationsHttpModule,
  StoreSyncsHttpModule,
  AiTasksHttpModule,
  MediaHttpModule,
  MaterialTransfersHttpModule,
  AuditHttpModule,
];

/**
 * The composition root: one DI graph per process role, from the same modules. Each role gets
 * only what it needs: the API its routes and the capabilities; the worker the capabilities and
 * its runtime; the dispatcher and the CLI the outbox alone (they never read a payload).
 */
@Module({})
export class AppModule {
  static forRole(role: 'api', config: AppConfig): DynamicModule;
  static forRole(role: 'worker' | 'dispatcher' | 'cli', config: OutboxConfig): DynamicModule;
  static forRole(role: ProcessRole, config: AppConfig | OutboxConfig): DynamicModule {
    if (role === 'api') return AppModule.api(config as AppConfig);
    const outbox = config as OutboxConfig;
    const infrastructure = InfrastructureModule.forRoot({
      applicationName: role === 'cli' ? 'outbox-cli' : role,
      databaseUrl: outboxDatabaseUrl(outbox),
      poolSize: role === 'cli' ? 2 : outbox.DATABASE_POOL_SIZE,
      // Only the worker prepares statements (its inbox): the dispatcher and the CLI never do, so
      // they need no switch behind a transaction pooler and are never refused there.
      preparedStatements: role === 'worker' && outbox.DATABASE_PREPARED_STATEMENTS,
      queues: {
        redis: redisTarget(outbox),
        prefix: outbox.BULLMQ_PREFIX,
        nudgeGapMs: outbox.OUTBOX_NUDGE_GAP_MS,
      },
      configs: [{ provide: OUTBOX_CONFIG, useValue: outbox }, ...outboxRoleProviders(role)],
    });
    const roleModules: Record<Exclude<ProcessRole, 'api'>, Type[]> = {
      worker: [WorkerModule, ...CAPABILITY_MODULES, ...testJobModules(outbox)],
      dispatcher: [DispatcherModule],
      cli: [CliModule],
    };
    return { module: AppModule, imports: [infrastructure, ...roleModules[role]] };
  }

  private static api(config: AppConfig): DynamicModule {
    const infrastructure = InfrastructureModule.forRoot({
      applicationName: 'api',
      databaseUrl: config.DATABASE_URL,
      poolSize: config.DATABASE_POOL_SIZE,
      preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
      queues: {
        redis: redisTarget(config),
        prefix: config.BULLMQ_PREFIX,
        nudgeGapMs: config.OUTBOX_NUDGE_GAP_MS,
      },
      configs: [
        { provide: APP_CONFIG, useValue: config },
        { provide: PLATFORM_CONFIG, useValue: config },
      ],
    });
    return {
      module: AppModule,
      imports: [infrastructure, OpsModule, IdempotencyModule, ...CAPABILITY_MODULES, ...HTTP_MODULES],
    };
  }
}

/** What the worker and dispatcher share besides their config: the logger, the platform config. */
function outboxRoleProviders(role: Exclude<ProcessRole, 'api'>): Provider[] {
  if (role === 'cli') return [];
  const logger = outboxLogger(createLogger(role, logLevelFromEnv()));
  const providers: Provider[] = [{ provide: OUTBOX_LOGGER, useValue: logger }];
  // The worker's jobs call the marketplace; its configuration is parsed once, here.
  if (role === 'worker') providers.push({ provide: PLATFORM_CONFIG, useValue: loadPlatformConfig() });
  return providers;
}

/** The test-only job, under NODE_ENV=test and OUTBOX_TEST_JOBS=1 (the config refuses it otherwise). */
function testJobModules(config: OutboxConfig): Type[] {
  return config.NODE_ENV === 'test' && config.OUTBOX_TEST_JOBS === '1' ? [TestEffectJobModule] : [];
}
