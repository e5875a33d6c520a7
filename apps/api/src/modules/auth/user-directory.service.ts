import { Injectable } from '@nestjs/common';
import { AuthRepository } from './auth.repository';

/** What other modules may know of a user account: who has an email (never its password hash). */
@Injectable()
export class UserDirectory {
  constructor(private readonly users: AuthRepository) {}

  async findByEmail(email: string): Promise<{ id: string; email: string } | undefined> {
    const user = await this.users.findUserByEmail(email);
    return user && { id: user.id, email: user.email };
  }
}
