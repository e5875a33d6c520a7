import { Module } from '@nestjs/common';
import { DispatcherProcess } from './dispatcher-process.service';
import { outboxRepositoryProvider } from './outbox-repository.provider';

/** The dispatcher role's providers: it needs no feature module (it never reads a payload). */
@Module({ providers: [outboxRepositoryProvider, DispatcherProcess] })
export class DispatcherModule {}
