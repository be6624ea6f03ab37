// Sealed ballots (contract 7 "Vote anonymity", design.md "Votes stay anonymous", db/sql/votes.sql).
// A vote's position exists in the clear only in this process: it is sealed here with AES-256-GCM
// under BALLOT_KEY (which the database never sees), a fresh 12-byte nonce per ballot, and the post
// and scope bound as associated data, so a sealed ballot opens only as a vote on that post in that
// scope. The ciphertext is one byte (the position's index) and a 16-byte tag: every ballot has the
// same length. The API opens a scope's pending ballots at read time, the tallier when it folds a
// batch of them into the counters (worker/tasks/votes/tally-ballots.ts, handed this box by main.ts
// as the BallotOpener it states). Nothing here logs, and no error names a position.
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { setBounded } from '../../bounded-map.ts';

export const ballotPositions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'] as const;
export type BallotPosition = (typeof ballotPositions)[number];

/** A key of BALLOT_KEY: its id (stored with each ballot it seals) and its 32 bytes. */
export interface BallotKey {
  id: string;
  key: Buffer;
}

/** A scope's tally as the database answers it (app.vote_tally): counter sums and pending sealed ballots. */
export interface SealedTally {
  /** The five counter sums, in position order. */
  c: (number | string)[];
  /** Pending ballots, each 'keyId:base64(nonce || ciphertext)'. */
  b: string[];
}

const nonceBytes = 12;
const tagBytes = 16;

function associatedData(postId: string, hubId: string | null): Buffer {
  return Buffer.from(`opinion-ballot:v1:${postId.toLowerCase()}:${hubId === null ? 'global' : hubId.toLowerCase()}`);
}

/** Ballots opened (or sealed) by this process, remembered: a pending ballot is read by every tally read until it is folded. */
const rememberedMax = 100_000;

export class BallotBox {
  /**
   * The keys as key objects, made once: given the bytes, every cipher first makes one of its own
   * (a seal cost 18 µs of CPU that way, 5.8 µs with the key object, Node 24).
   */
  readonly #sealing: { id: string; key: KeyObject };
  readonly #keys: Map<string, KeyObject>;
  /**
   * Position index by post, scope and stored ballot ('keyId:base64'): the post and scope are part
   * of the key, so a ballot copied to another post or scope is not found here and fails to open
   * there. Positions this process already holds in the clear; nothing leaves it.
   */
  readonly #remembered = new Map<string, number>();

  /** `keys`: the first seals; every one opens what it sealed (rotation keeps old keys until their ballots are tallied). */
  constructor(keys: BallotKey[]) {
    const first = keys[0];
    if (!first) throw new Error('BallotBox needs a key');
    for (const { key } of keys) if (key.length !== 32) throw new Error('a ballot key is 32 bytes');
    this.#sealing = { id: first.id, key: createSecretKey(first.key) };
    this.#keys = new Map(keys.map(({ id, key }) => [id, createSecretKey(key)]));
  }

  get keyId(): string {
    return this.#sealing.id;
  }

  /** nonce || ciphertext || tag (29 bytes) of `position` for this post and scope, under the sealing key. */
  seal(postId: string, hubId: string | null, position: BallotPosition): Buffer {
    const index = ballotPositions.indexOf(position);
    if (index < 0) throw new Error('not a vote position');
    const nonce = randomBytes(nonceBytes);
    const cipher = createCipheriv('aes-256-gcm', this.#sealing.key, nonce, { authTagLength: tagBytes });
    cipher.setAAD(associatedData(postId, hubId));
    const sealed = Buffer.concat([nonce, cipher.update(Buffer.of(index)), cipher.final(), cipher.getAuthTag()]);
    this.#remember(postId, hubId, `${this.#sealing.id}:${sealed.toString('base64')}`, index);
    return sealed;
  }

  #remember(postId: string, hubId: string | null, stored: string, index: number): void {
    setBounded(this.#remembered, `${postId.toLowerCase()}:${hubId?.toLowerCase() ?? 'global'}:${stored}`, index, rememberedMax);
  }

  /** The position index (0-4) of a sealed ballot of this post and scope; throws when it does not open. */
  open(postId: string, hubId: string | null, keyId: string, sealed: Buffer): number {
    const key = this.#keys.get(keyId);
    if (!key) throw new Error(`a sealed ballot names key "${keyId}", which BALLOT_KEY does not hold`);
    if (sealed.length !== nonceBytes + 1 + tagBytes) throw new Error('a sealed ballot has the wrong length');
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, nonceBytes), { authTagLength: tagBytes });
    decipher.setAAD(associatedData(postId, hubId));
    decipher.setAuthTag(sealed.subarray(nonceBytes + 1));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(sealed.subarray(nonceBytes, nonceBytes + 1)), decipher.final()]);
    } catch {
      throw new Error('a sealed ballot does not open for its post and scope (altered, moved, or another key)');
    }
    const index = plain[0] as number;
    if (index >= ballotPositions.length) throw new Error('a sealed ballot holds no position');
    return index;
  }

  /** One stored ballot, 'keyId:base64(nonce || ciphertext)', opened. */
  openStored(postId: string, hubId: string | null, stored: string): number {
    const known = this.#remembered.get(`${postId.toLowerCase()}:${hubId?.toLowerCase() ?? 'global'}:${stored}`);
    if (known !== undefined) return known;
    const colon = stored.indexOf(':');
    const index = this.open(postId, hubId, stored.slice(0, colon), Buffer.from(stored.slice(colon + 1), 'base64'));
    this.#remember(postId, hubId, stored, index);
    return index;
  }

  /** The exact five counts of a scope: the counter sums plus its pending ballots, opened. */
  openTally(tally: SealedTally, postId: string, hubId: string | null): number[] {
    const counts = tally.c.map(Number);
    for (const stored of tally.b) {
      const index = this.openStored(postId, hubId, stored);
      counts[index] = (counts[index] ?? 0) + 1;
    }
    return counts;
  }
}
