import { Body, Controller, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { Idempotent, IdempotencyRequest, type IdempotentRequestContext } from '@listing/idempotency';
import type { z } from 'zod';
import { acceptedResponse } from '../../common/accepted-response';
import { ParseIdPipe } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { createTransferSchema, listQuerySchema, type CreateTransfer } from './material-transfer.dto';
import { MaterialTransfersService } from './material-transfers.service';
import { ApiDoc } from '../../common/api-doc.decorator';
import {
  materialTransferPageSchema,
  materialTransferViewSchema,
  transferAcceptedSchema,
} from './material-transfer-view';

interface Reply {
  header(name: string, value: string): unknown;
}

@Controller('v1/workspaces/:workspaceId/material-transfers')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class MaterialTransfersController {
  constructor(private readonly transfers: MaterialTransfersService) {}

  @Post()
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({
    summary: 'Copy collected material from an allowlisted source into object storage',
    problems: ['SOURCE_NOT_ALLOWED', 'MATERIAL_TRANSFER_EXISTS'],
    response: transferAcceptedSchema,
  })
  async create(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Body(new ZodValidationPipe(createTransferSchema)) body: CreateTransfer,
    @Res({ passthrough: true }) reply: Reply,
  ) {
    const outcome = await this.transfers.create(auth, idem, body.sourceUrl);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Get()
  @ApiDoc({
    summary: "The workspace's material transfers, newest first",
    response: materialTransferPageSchema,
  })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(listQuerySchema)) query: z.infer<typeof listQuerySchema>,
  ) {
    return this.transfers.list(auth, query.limit, query.cursor);
  }

  @Get(':transferId')
  @ApiDoc({ summary: 'One material transfer', response: materialTransferViewSchema })
  async get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('transferId', new ParseIdPipe('material transfer')) id: string,
  ) {
    return this.transfers.get(auth, id);
  }
}
