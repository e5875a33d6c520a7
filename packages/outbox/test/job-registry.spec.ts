import { z } from 'zod';
import {
  defineJob,
  JobRegistry,
  OnOutboxDeadLetter,
  OutboxError,
  OutboxHandler,
  type DeadLetterContext,
  type JobContext,
} from '../src';

const a = defineJob({ name: 'a.job', queue: 'qa', schema: z.object({ id: z.string() }) });
const b = defineJob({ name: 'b.job', queue: 'qb', schema: z.object({}) });

class Handlers {
  calls: string[] = [];
  @OutboxHandler(a)
  async onA(payload: { id: string }, _ctx: JobContext) {
    this.calls.push(payload.id);
    return this;
  }
}

class WithReaction extends Handlers {
  abandoned: string[] = [];
  @OnOutboxDeadLetter(a)
  async gaveUp(payload: { id: string }, ctx: DeadLetterContext) {
    this.abandoned.push(`${payload.id}@${ctx.workspaceId}`);
  }
}

describe('JobRegistry', () => {
  it('binds @OnOutboxDeadLetter reactions to their instance (inherited handlers too); one per job', async () => {
    const instance = new WithReaction();
    const registry = new JobRegistry().registerHandlers(instance);
    registry.assertComplete();
    await registry.deadLetterReaction('a.job')!({ id: 'x' }, { eventId: 'e', workspaceId: 'w' });
    expect(instance.abandoned).toEqual(['x@w']);
    expect(registry.deadLetterReaction('b.job')).toBeUndefined();
    expect(() => registry.onDeadLetter(a, async () => undefined)).toThrow(
      expect.objectContaining({ code: 'OUTBOX_HANDLER_DUPLICATE' }),
    );
  });

  it('binds decorated handlers to their instance, works without Nest', async () => {
    const handlers = new Handlers();
    const registry = new JobRegistry().registerHandlers(handlers);
    registry.assertComplete();
    expect(registry.queues()).toEqual(['qa']);
    const result = await registry.handler('a.job')!({ id: 'x' }, {} as JobContext);
    expect(result).toBe(handlers);
    expect(handlers.calls).toEqual(['x']);
  });

  it('start-up check: every defined job needs a handler', () => {
    const registry = new JobRegistry().define(a, b).handle(a, async () => null);
    expect(() => registry.assertComplete()).toThrow(
      expect.objectContaining({ code: 'OUTBOX_HANDLER_MISSING' }),
    );
  });

  it('start-up check: no job may have two handlers', () => {
    const registry = new JobRegistry().registerHandlers(new Handlers()).handle(a, async () => null);
    let error: unknown;
    try {
      registry.assertComplete();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutboxError);
    expect(error).toMatchObject({ code: 'OUTBOX_HANDLER_DUPLICATE', details: { duplicated: ['a.job'] } });
    expect(registry.handler('a.job')).toBeUndefined();
  });

  it('refuses one job name in two queues and invalid names', () => {
    const clash = defineJob({ name: 'a.job', queue: 'other', schema: z.object({}) });
    expect(() => new JobRegistry().define(a, clash)).toThrow(
      expect.objectContaining({ code: 'OUTBOX_JOB_CONFLICT' }),
    );
    expect(() => defineJob({ name: 'bad name', queue: 'q', schema: z.object({}) })).toThrow(OutboxError);
    expect(() => defineJob({ name: 'ok', queue: 'bad:queue', schema: z.object({}) })).toThrow(OutboxError);
  });

  it('transaction: false means no inbox, and asking for both is refused', () => {
    const outside = defineJob({ name: 'o', queue: 'q', schema: z.object({}), transaction: false });
    expect(outside).toMatchObject({ transaction: false, inbox: false });
    expect(defineJob({ name: 'd', queue: 'q', schema: z.object({}) })).toMatchObject({
      transaction: true,
      inbox: true,
    });
    expect(() =>
      defineJob({ name: 'b', queue: 'q', schema: z.object({}), transaction: false, inbox: true }),
    ).toThrow(expect.objectContaining({ code: 'OUTBOX_INVALID_JOB' }));
  });

  it('system jobs never use the inbox', () => {
    expect(
      defineJob({ name: 's', queue: 'q', schema: z.object({}), scope: 'system', inbox: true }).inbox,
    ).toBe(false);
    expect(a.inbox).toBe(true);
  });
});
