// The production database shape of docs/deployment.md "Losing the primary", on this machine: one etcd,
// three Patroni nodes of PostgreSQL 15 and HAProxy in front of them, from Debian's packages
// (test/helpers/engines.ts), on free loopback ports in a temporary folder. The nodes run the shipped
// deploy/patroni/patroni.yml and HAProxy the shipped deploy/haproxy/haproxy.cfg, with only the
// addresses, folders and passwords replaced, and Patroni's timing set to `test` (ttl 10 s,
// loop_wait 1 s, retry_timeout 4 s) or `production` (the file's own: 30 s, 10 s, 10 s).
// `primaryUrl` is DATABASE_URL through HAProxy's leader port; the cluster is returned once the first
// node leads and HAProxy reaches it (the standbys still copying it: waitHealthy waits for them). Faults: kill (-9 of the node's Patroni,
// postmaster and backends), freeze/thaw (SIGSTOP/SIGCONT: a hung machine), start (a killed node
// rejoins, rewound), switchover (patronictl). As root, Patroni and PostgreSQL run as `postgres`.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { parse, stringify } from 'yaml';
import { freePort } from '../../db/free-port.ts';
import { engines } from './engines.ts';
import { projectRoot } from './process.ts';

const run = promisify(execFile);

export const timings = {
  test: { ttl: 10, loop_wait: 1, retry_timeout: 4 },
  production: { ttl: 30, loop_wait: 10, retry_timeout: 10 },
} as const;

export interface Member {
  name: string;
  role: string;
  state: string;
  lag?: number | string;
  timeline?: number;
}

export interface PatroniCluster {
  /** The owner's URL through HAProxy's leader port (DATABASE_URL). */
  primaryUrl: string;
  /** The owner's URL through HAProxy's standby port (DATABASE_REPLICA_URLS). */
  replicaUrl: string;
  /** The owner's URL straight to one node's PostgreSQL. */
  nodeUrl(name: string): string;
  names: string[];
  /** The cluster as Patroni's REST API tells it (from any node that answers). */
  members(): Promise<Member[]>;
  /** Waits until a leader other than `not` holds the key and HAProxy's leader port reaches a writable node; its name. */
  waitForLeader(options?: { not?: string; timeoutMillis?: number }): Promise<string>;
  /** Waits until every node runs: a leader, a synchronous standby and the other standby streaming. */
  waitHealthy(timeoutMillis?: number): Promise<string>;
  /** kill -9 of the node's Patroni, its postmaster and every backend (a crashed machine). */
  kill(name: string): Promise<void>;
  /** SIGSTOP to the node's Patroni, postmaster and backends (a hung machine: the kernel still answers TCP). */
  freeze(name: string): Promise<void>;
  thaw(name: string): Promise<void>;
  /** Starts a node's Patroni again (after kill): it rejoins as a standby. */
  start(name: string): Promise<void>;
  /** A planned switchover from the leader to `candidate` (patronictl). */
  switchover(leader: string, candidate: string): Promise<void>;
  patronictl(...args: string[]): Promise<string>;
  /** The output of a node's Patroni (and its PostgreSQL) so far. */
  log(name: string): string;
  stop(): Promise<void>;
}

interface Node {
  name: string;
  pgPort: number;
  restPort: number;
  dataDir: string;
  configPath: string;
  process?: ChildProcess;
  exited?: Promise<void>;
  output: string[];
}

async function postgresAccount(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  };
}

/** Whether this Patroni's etcd v3 client checks the leader key before writing it (3.0.3 and later). */
async function fixedEtcd3Client(): Promise<boolean> {
  const { stdout } = await run(engines.patroni, ['--version']);
  const [major = 0, minor = 0, patch = 0] = (/(\d+)\.(\d+)\.(\d+)/.exec(stdout) ?? []).slice(1).map(Number);
  return major * 10_000 + minor * 100 + patch >= 30_003;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, timeoutMillis: number, attempt: () => Promise<T | undefined>, everyMillis = 100): Promise<T> {
  const deadline = Date.now() + timeoutMillis;
  let last: unknown;
  for (;;) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await pause(everyMillis);
  }
}

function keepOutput(child: ChildProcess, output: string[]): void {
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 5000) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
}

/** The pids of a process's children (pgrep -P). */
async function childrenOf(pid: number): Promise<number[]> {
  try {
    return (await run('pgrep', ['-P', String(pid)])).stdout.split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export async function startPatroniCluster({ timing = 'test' as keyof typeof timings } = {}): Promise<PatroniCluster> {
  const account = await postgresAccount();
  const folder = await mkdtemp(path.join(os.tmpdir(), 'opinion-patroni-'));
  if (account) await chown(folder, account.uid, account.gid);
  const password = randomBytes(12).toString('hex');
  const template = parse(await readFile(path.join(projectRoot, 'deploy/patroni/patroni.yml'), 'utf8')) as Record<string, any>;
  const postBootstrap = path.join(folder, 'post-bootstrap.sh');
  await copyFile(path.join(projectRoot, 'deploy/patroni/post-bootstrap.sh'), postBootstrap);

  const etcdClientPort = await freePort();
  const etcdPeerPort = await freePort();
  const haproxyPrimaryPort = await freePort();
  const haproxyReplicaPort = await freePort();
  const haproxyHealthPort = await freePort();
  const names = ['pg-1', 'pg-2', 'pg-3'];
  const nodes = new Map<string, Node>();
  for (const name of names) {
    const dir = path.join(folder, name);
    await mkdir(dir, { mode: 0o700 });
    if (account) await chown(dir, account.uid, account.gid);
    nodes.set(name, {
      name,
      pgPort: await freePort(),
      restPort: await freePort(),
      dataDir: path.join(dir, 'data'),
      configPath: path.join(dir, 'patroni.yml'),
      output: [],
    });
  }

  const children: ChildProcess[] = [];
  const stopAll = async () => {
    for (const node of nodes.values()) {
      if (node.process && node.process.exitCode === null && node.process.signalCode === null) {
        await signalNode(node, 'SIGCONT').catch(() => undefined);
      }
    }
    await Promise.all([...nodes.values()].map((node) => killNode(node).catch(() => undefined)));
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(folder, { recursive: true, force: true });
  };

  const nodeUrl = (name: string) => `postgres://opinion:${password}@127.0.0.1:${nodes.get(name)!.pgPort}/opinion`;
  const primaryUrl = `postgres://opinion:${password}@127.0.0.1:${haproxyPrimaryPort}/opinion`;
  const replicaUrl = `postgres://opinion:${password}@127.0.0.1:${haproxyReplicaPort}/opinion`;

  async function postmasterPid(node: Node): Promise<number | undefined> {
    try {
      const pid = Number((await readFile(path.join(node.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  }

  /** The node's Patroni, postmaster and the postmaster's children. */
  async function pidsOf(node: Node): Promise<number[]> {
    const pids: number[] = [];
    if (node.process?.pid && node.process.exitCode === null && node.process.signalCode === null) pids.push(node.process.pid);
    const postmaster = await postmasterPid(node);
    if (postmaster) pids.push(postmaster, ...(await childrenOf(postmaster)));
    return pids;
  }

  async function signalNode(node: Node, signal: NodeJS.Signals): Promise<void> {
    for (const pid of await pidsOf(node)) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone meanwhile
      }
    }
  }

  async function killNode(node: Node): Promise<void> {
    const postmaster = await postmasterPid(node);
    await signalNode(node, 'SIGKILL');
    await node.exited;
    // The postmaster's children notice its death and exit; wait for them, so the port is free.
    if (postmaster)
      await until(
        'the killed postmaster to be gone',
        10_000,
        async () => ((await childrenOf(postmaster)).length === 0 && !(await postmasterPid(node)) ? true : undefined),
        20,
      );
    node.process = undefined;
  }

  function startNode(node: Node): void {
    const child = spawn(engines.patroni, [node.configPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: `${engines.postgres15}:/usr/bin:/bin`, HOME: folder, LANG: 'C.UTF-8' },
      ...(account ?? {}),
    });
    keepOutput(child, node.output);
    node.process = child;
    node.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  async function rest<T>(node: Node, pathname: string): Promise<T> {
    const response = await fetch(`http://127.0.0.1:${node.restPort}${pathname}`, { signal: AbortSignal.timeout(1000) });
    return (await response.json()) as T;
  }

  async function members(): Promise<Member[]> {
    let last: unknown;
    for (const node of nodes.values()) {
      try {
        return (await rest<{ members: Member[] }>(node, '/cluster')).members;
      } catch (error) {
        last = error;
      }
    }
    throw new Error(`no Patroni REST API answered: ${(last as Error | undefined)?.message}`);
  }

  /** True when HAProxy's leader port reaches a node that takes writes. */
  async function writable(): Promise<boolean> {
    const client = new pg.Client({ connectionString: primaryUrl, connectionTimeoutMillis: 1000, query_timeout: 1000 });
    client.on('error', () => {});
    try {
      await client.connect();
      const { rows } = await client.query<{ recovery: boolean }>('select pg_is_in_recovery() as recovery');
      return rows[0]?.recovery === false;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  try {
    const dcsApi = (await fixedEtcd3Client()) ? 'etcd3' : 'etcd';
    // etcd: one member (the production shape has three: docker-compose.patroni.yml).
    const etcd = spawn(
      engines.etcd,
      [
        '--name',
        'etcd-1',
        '--data-dir',
        path.join(folder, 'etcd'),
        '--listen-client-urls',
        `http://127.0.0.1:${etcdClientPort}`,
        '--advertise-client-urls',
        `http://127.0.0.1:${etcdClientPort}`,
        '--listen-peer-urls',
        `http://127.0.0.1:${etcdPeerPort}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${etcdPeerPort}`,
        '--initial-cluster',
        `etcd-1=http://127.0.0.1:${etcdPeerPort}`,
        '--log-level',
        'warn',
        ...(dcsApi === 'etcd' ? ['--enable-v2'] : []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const etcdOutput: string[] = [];
    keepOutput(etcd, etcdOutput);
    children.push(etcd);
    await until('etcd', 20_000, async () => {
      const response = await fetch(`http://127.0.0.1:${etcdClientPort}/health`, { signal: AbortSignal.timeout(1000) });
      return response.ok ? true : undefined;
    });

    const { ttl, loop_wait, retry_timeout } = timings[timing];
    for (const node of nodes.values()) {
      const config = structuredClone(template);
      config.name = node.name;
      config.restapi = { ...config.restapi, listen: `127.0.0.1:${node.restPort}`, connect_address: `127.0.0.1:${node.restPort}` };
      // Patroni before 3.0.3 (Debian 12 has 3.0.2) may write the leader key over another node's through
      // etcd's v3 API: a leader frozen past its ttl took the key back from the standby promoted
      // meanwhile when thawed (patroni/patroni#2689). Its v2 API client compares the key's value
      // first, so such a Patroni uses that (etcd runs with --enable-v2).
      delete config.etcd3;
      config[dcsApi] = { hosts: `127.0.0.1:${etcdClientPort}` };
      config.bootstrap.dcs = { ...config.bootstrap.dcs, ttl, loop_wait, retry_timeout };
      config.bootstrap.post_bootstrap = postBootstrap;
      const dirname = path.dirname(node.dataDir);
      config.postgresql = {
        ...config.postgresql,
        listen: `127.0.0.1:${node.pgPort}`,
        connect_address: `127.0.0.1:${node.pgPort}`,
        data_dir: node.dataDir,
        bin_dir: engines.postgres15,
        pgpass: path.join(dirname, 'pgpass'),
        // The copy is not synced to disk either (no machine crash here).
        basebackup: [...config.postgresql.basebackup, 'no-sync'],
        // This node's own settings: a small server, and no fsync (a test kills processes, never the machine).
        // (full_page_writes stays on: pg_rewind needs it.)
        parameters: { unix_socket_directories: dirname, shared_buffers: '32MB', fsync: 'off' },
        authentication: {
          superuser: { ...config.postgresql.authentication.superuser, password },
          replication: { ...config.postgresql.authentication.replication, password },
          rewind: { ...config.postgresql.authentication.rewind, password },
        },
      };
      config.log = { level: process.env.PATRONI_LOG_LEVEL ?? 'WARNING' };
      await writeFile(node.configPath, stringify(config), { mode: 0o600 });
      if (account) await chown(node.configPath, account.uid, account.gid);
    }
    // The first node bootstraps alone; the others then copy it (pg_basebackup, checkpoint fast).
    const [first, ...others] = [...nodes.values()] as [Node, ...Node[]];
    startNode(first);
    await until('the first node to lead', 60_000, async () =>
      (await members()).some((member) => member.role === 'leader' && member.state === 'running') ? true : undefined,
    );
    for (const node of others) startNode(node);

    let haproxyConfig = await readFile(path.join(projectRoot, 'deploy/haproxy/haproxy.cfg'), 'utf8');
    haproxyConfig = haproxyConfig
      .replace('bind *:5000', `bind 127.0.0.1:${haproxyPrimaryPort}`)
      .replace('bind *:5001', `bind 127.0.0.1:${haproxyReplicaPort}`)
      .replace('bind *:8404', `bind 127.0.0.1:${haproxyHealthPort}`)
      .replace(/server (pg-\d) \S+ (.*) check port 8008/g, (_line, name: string, rest: string) => {
        const node = nodes.get(name)!;
        return `server ${name} 127.0.0.1:${node.pgPort} ${rest} check port ${node.restPort}`;
      });
    const haproxyPath = path.join(folder, 'haproxy.cfg');
    await writeFile(haproxyPath, haproxyConfig);
    const haproxy = spawn(engines.haproxy, ['-db', '-f', haproxyPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    const haproxyOutput: string[] = [];
    keepOutput(haproxy, haproxyOutput);
    children.push(haproxy);

    const cluster: PatroniCluster = {
      primaryUrl,
      replicaUrl,
      nodeUrl,
      names,
      members,
      async waitForLeader({ not, timeoutMillis = 60_000 } = {}) {
        return until(`a leader${not ? ` other than ${not}` : ''}`, timeoutMillis, async () => {
          const leader = (await members()).find((member) => member.role === 'leader' && member.state === 'running');
          if (!leader || leader.name === not) return undefined;
          return (await writable()) ? leader.name : undefined;
        });
      },
      async waitHealthy(timeoutMillis = 90_000) {
        return until('three running nodes (a leader, a synchronous standby, a streaming standby)', timeoutMillis, async () => {
          const all = await members();
          const leader = all.find((member) => member.role === 'leader' && member.state === 'running');
          const standbys = all.filter(
            (member) => member.role !== 'leader' && ['running', 'streaming'].includes(member.state) && member.lag !== 'unknown',
          );
          if (!leader || standbys.length !== 2 || !standbys.some((member) => member.role === 'sync_standby')) return undefined;
          return (await writable()) ? leader.name : undefined;
        });
      },
      async kill(name) {
        await killNode(nodes.get(name)!);
      },
      async freeze(name) {
        await signalNode(nodes.get(name)!, 'SIGSTOP');
      },
      async thaw(name) {
        await signalNode(nodes.get(name)!, 'SIGCONT');
      },
      async start(name) {
        startNode(nodes.get(name)!);
      },
      async switchover(leader, candidate) {
        await cluster.patronictl('switchover', '--leader', leader, '--candidate', candidate, '--force');
      },
      async patronictl(...args) {
        const { stdout } = await run('patronictl', ['-c', nodes.get('pg-1')!.configPath, ...args], {
          env: { ...process.env, LANG: 'C.UTF-8' },
        });
        return stdout;
      },
      log: (name) => nodes.get(name)!.output.join(''),
      stop: stopAll,
    };
    // The standbys go on copying the leader: waitHealthy() waits for them.
    await cluster.waitForLeader();
    return cluster;
  } catch (error) {
    const logs = [...nodes.values()].map((node) => `--- ${node.name}\n${node.output.join('').slice(-3000)}`).join('\n');
    await stopAll();
    throw new Error(`${(error as Error).message}\n${logs}`, { cause: error });
  }
}
