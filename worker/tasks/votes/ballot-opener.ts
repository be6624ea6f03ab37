// What the tallier needs of ballot sealing: opening one sealed ballot of a post and scope. main.ts
// passes the API's BallotBox (server/votes/ballots.ts, BALLOT_KEY), which has this method among
// others; the worker imports nothing of server/ (dependencies run main → worker, server → db → config).
export interface BallotOpener {
  /** The position index (0-4) of a sealed ballot of this post and scope; throws when it does not open. */
  open(postId: string, hubId: string | null, keyId: string, sealed: Buffer): number;
}
