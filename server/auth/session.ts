// The session payload (contract section 3), returned by OTP verify, IdP exchange, anonymous
// session and refresh.
import { z } from 'zod';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { Tokens } from './tokens.ts';
import { accessTokenSeconds, refreshTokenSeconds } from './tokens.ts';
import { text, textMax } from '../http/text.ts';

export const sessionResponse = z
  .object({
    accessToken: text(textMax.token),
    refreshToken: text(textMax.token),
    tokenType: z.literal('Bearer'),
    expiresIn: z.number().int(),
    refreshExpiresIn: z.number().int(),
    user: z.object({
      id: z.string(),
      isAnonymous: z.boolean(),
      phoneVerified: z.boolean(),
      accessLevel: z.number().int().min(1).max(4),
      restored: z
        .literal(true)
        .optional()
        .describe('Present (true) when this sign-in cancelled the deletion of the account (POST /users/me/deletion) and restored it.'),
    }),
  })
  .meta({ id: 'Session' });

export type SessionResponse = z.input<typeof sessionResponse>;

/** Builds the payload for a session just started or refreshed in this transaction. */
export async function sessionPayload(
  tx: RequestTransaction,
  tokens: Tokens,
  session: { userId: string; sessionId: string; refreshToken: string; issuedAt?: Date },
): Promise<SessionResponse> {
  await tx.query(`select set_config('app.user_id', $1, true), set_config('app.session_id', $2, true)`, [session.userId, session.sessionId]);
  const { rows } = await tx.query<{ id: string; is_anonymous: boolean; phone_verified: boolean; access_level: number; restored: boolean }>(
    // app.restored: set by the sign-in's transaction when it cancelled a deletion (app.start_session, db/sql/auth.sql).
    `select id, is_anonymous, phone_verified, access_level, current_setting('app.restored', true) = 'true' as restored from app.session_user()`,
  );
  const user = rows[0];
  if (!user) throw new Error('session user vanished');
  return {
    accessToken: tokens.issueAccess(session, session.issuedAt),
    refreshToken: session.refreshToken,
    tokenType: 'Bearer',
    expiresIn: accessTokenSeconds,
    refreshExpiresIn: refreshTokenSeconds,
    user: {
      id: user.id,
      isAnonymous: user.is_anonymous,
      phoneVerified: user.phone_verified,
      accessLevel: user.access_level,
      ...(user.restored ? { restored: true as const } : {}),
    },
  };
}
