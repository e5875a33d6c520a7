import { Injectable } from '@nestjs/common';
import { AuditRepository, type AuditEntry } from './audit.repository';

export type { AuditEntry } from './audit.repository';

/** The audit log every module writes to, in the caller's transaction (append-only). */
@Injectable()
export class AuditService {
  constructor(private readonly audit: AuditRepository) {}

  append(entry: AuditEntry): Promise<void> {
    return this.audit.append(entry);
  }
}
