import { Injectable } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import {
  declaredJobsOf,
  decoratedDeadLetterReactions,
  decoratedHandlers,
  JobRegistry,
  OutboxError,
} from '@listing/outbox';

/**
 * Builds the worker's job registry from the DI graph: the jobs each module declares
 * (@DeclareJobs on the module class) and the @OutboxHandler / @OnOutboxDeadLetter methods of its
 * providers. Refuses, naming them, a declared job without a handler or with two, and a handler
 * of a job no module declares: a job left out of its module would otherwise be dispatched into a
 * queue nobody reads, its operation pending forever.
 */
@Injectable()
export class JobDiscovery {
  constructor(private readonly modules: ModulesContainer) {}

  registry(): JobRegistry {
    const registry = new JobRegistry();
    const declared = new Set<string>();
    for (const module of this.modules.values()) {
      for (const job of declaredJobsOf(module.metatype)) {
        registry.define(job);
        declared.add(job.name);
      }
    }
    const undeclared: string[] = [];
    for (const module of this.modules.values()) {
      for (const wrapper of module.providers.values()) {
        const instance: unknown = wrapper.instance;
        if (typeof instance !== 'object' || instance === null) continue;
        const jobs = [...decoratedHandlers(instance), ...decoratedDeadLetterReactions(instance)];
        if (!jobs.length) continue;
        for (const { job } of jobs) {
          if (!declared.has(job.name)) undeclared.push(`${job.name} (${String(wrapper.name)})`);
        }
        registry.registerHandlers(instance);
      }
    }
    if (undeclared.length) {
      throw new OutboxError(
        'OUTBOX_HANDLER_UNDEFINED_JOB',
        `handlers of jobs no module declares (add them to @DeclareJobs): ${[...new Set(undeclared)].join(', ')}`,
        { undeclared },
      );
    }
    registry.assertComplete();
    return registry;
  }
}
