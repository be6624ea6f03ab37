// Media benchmark: `npm run bench -- media`. Not part of `npm test`.
//
// 1. The image engine alone (worker/tasks/uploads/images, decoder processes forked from this process, the
//    IMAGE_* settings of the environment): a 12-megapixel JPEG (4000 x 3000, photo-like, made by
//    test/helpers/images.ts) processed one at a time, the same photo as HEIC, the 20000 x 20000 PNG
//    bomb refused, BENCH_MEDIA_BURST photos at once with the decoders' peak resident memory, and the
//    1280 px WebP's bytes against the upload's.
// 2. The service, as production runs it: the API (`node main.ts --only=api`) and the worker
//    (`node main.ts --only=worker`) in processes of their own, on a fresh database of DATABASE_URL's
//    server or of a throwaway embedded PostgreSQL, with a local S3-compatible store; uploads through
//    the REST contract (presign, PUT to uploadUrl, complete; `complete` answers `status: "ready"`
//    or `"processing"`, then GET /uploads/{assetId} is polled until ready):
//      photo_12mp_ready_p50_s            complete to ready, one 12 MP JPEG at a time
//      bomb_refused_ms                   complete of the PNG bomb to its 422 IMAGE_TOO_LARGE
//      rest_p95_during_upload_burst_vs_quiet  p95 of the REST mix (from media-load.ts, a process
//                                        of its own) while BENCH_MEDIA_BURST photos complete, over
//                                        its p95 for as long without uploads, per repeat
//      variant_bytes_vs_original         the 1280 px WebP's bytes over the upload's
//      worker_rss_peak_mb                the worker process and its decoder processes, during a burst
//    A service whose `complete` answers no `status` does not process images: part 2 says so and stops.
// Settings: BENCH_REPEATS (3), BENCH_MEDIA_SINGLES (10), BENCH_MEDIA_BURST (20), BENCH_MEDIA_LOAD
// (REST requests in flight, 8), BENCH_MEDIA_PARTS (`engine,service`: either alone runs one part).
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import S3rver from 's3rver';
import { loadConfig } from '../../config.ts';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from '../../db/free-port.ts';
import { createLogger } from '../../logger.ts';
import { startImageProcessor } from '../../worker/tasks/uploads/images/processor.ts';
import { heicFrom, markedImage, photo12mp, pngBomb } from '../helpers/images.ts';
import { cleanUp, stopOnExit } from './cleanup.ts';
import type { MediaLoadResult, MediaLoadStart } from './media-load.ts';
import { keepFolders } from '../../server/uploads/s3rver-folders.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const singles = Number(process.env.BENCH_MEDIA_SINGLES ?? 10);
const burst = Number(process.env.BENCH_MEDIA_BURST ?? 20);
const loadConcurrency = Number(process.env.BENCH_MEDIA_LOAD ?? 8);
const parts = (process.env.BENCH_MEDIA_PARTS ?? 'engine,service').split(',');
const log = (line: string) => process.stdout.write(`${line}\n`);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
};
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle)
    ? ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
    : (sorted[Math.floor(middle)] as number);
};
const fmt = (value: number, digits = 2) => value.toFixed(digits);
function goal(name: string, values: number[], target: string, ok: ((value: number) => boolean) | undefined): void {
  const value = median(values);
  const verdict = ok === undefined ? 'report' : ok(value) ? 'ok' : 'short';
  log(`goal ${name}: ${fmt(value)} (min ${fmt(Math.min(...values))}, max ${fmt(Math.max(...values))}; target ${target}) ${verdict}`);
}

/** Resident MB of a process and all its descendants (Linux /proc). */
function treeResidentMb(pid: number): number {
  let kb = 0;
  try {
    kb += Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean))
        kb += treeResidentMb(Number(child)) * 1024;
    }
  } catch {
    // ended meanwhile
  }
  return kb / 1024;
}

/** CPU seconds (user + system) a process has used, with its descendants that have ended and been waited for (Linux /proc). */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    // utime, stime, cutime, cstime: fields 14-17 of stat, 11-14 after the command.
    return ((fields[11] as number) + (fields[12] as number) + (fields[13] as number) + (fields[14] as number)) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of a process and its live descendants. */
function treeCpuSeconds(pid: number): number {
  let total = cpuSeconds(pid);
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean))
        total += treeCpuSeconds(Number(child));
    }
  } catch {
    // ended meanwhile
  }
  return total;
}

/** Samples `measure` every 20 ms until the returned stop is called; resolves the peak. */
function peakOf(measure: () => number): () => number {
  let peak = measure();
  const timer = setInterval(() => (peak = Math.max(peak, measure())), 20);
  return () => {
    clearInterval(timer);
    return Math.max(peak, measure());
  };
}

const scratch = await mkdtemp(path.join(os.tmpdir(), 'opinion-media-bench-'));
await chmod(scratch, 0o755);
stopOnExit(() => rm(scratch, { recursive: true, force: true }));

log(
  `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), ${Math.round(os.totalmem() / 2 ** 30)} GB, load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
const photo = await photo12mp();
const smallPhoto = await markedImage(64, 48).jpeg().toBuffer();
const bomb = pngBomb(20_000);
log(`images: a 4000 x 3000 JPEG of ${fmt(photo.length / 2 ** 20)} MiB; the bomb: a 20000 x 20000 PNG of ${fmt(bomb.length / 1024, 0)} KiB`);

// ---------------------------------------------------------------- 1. The engine alone
if (parts.includes('engine')) {
  const { images } = loadConfig({ ...process.env, DATA_DIR: scratch, LOG_LEVEL: 'silent' });
  log(`\n1. engine alone: ${images.concurrency} decoder processes, ${images.memoryMb} MB and ${images.timeoutMs} ms each`);
  const processor = startImageProcessor({ ...images, log: createLogger('silent') });
  stopOnExit(() => processor.close());
  await processor.process(smallPhoto, 'image/jpeg', 'fit'); // the first decoder started

  // CPU seconds of the decoder processes (this process's descendants): what an image costs whatever else runs on the machine.
  const decodersCpu = () => treeCpuSeconds(process.pid) - cpuSeconds(process.pid);
  const seconds: number[] = [];
  const cpu: number[] = [];
  let ratio = 0;
  for (let i = 0; i < singles; i++) {
    const started = performance.now();
    const cpuBefore = decodersCpu();
    const image = await processor.process(photo, 'image/jpeg', 'fit');
    seconds.push((performance.now() - started) / 1000);
    cpu.push(decodersCpu() - cpuBefore);
    const webp1280 = image.variants.find(
      (variant) => variant.contentType === 'image/webp' && Math.max(variant.width, variant.height) === 1280,
    );
    ratio = (webp1280?.bytes.length ?? NaN) / photo.length;
    if (i === 0)
      log(
        `  variants of the 12 MP photo: ${image.variants.map((v) => `${v.width}x${v.height} ${v.contentType.slice(6)} ${fmt(v.bytes.length / 1024, 0)} KiB`).join(', ')}`,
      );
  }
  goal('engine_photo_12mp_s', seconds, '<= 2', (value) => value <= 2);
  goal('engine_photo_12mp_cpu_s', cpu, 'report: CPU seconds of the decoder', undefined);

  if (processor.heic) {
    // heif-enc's fastest preset: encoding 12 MP at its default takes a minute on this machine, and the decode is what is measured.
    const heic = await heicFrom(photo, ['-p', 'preset=ultrafast']);
    const heicSeconds: number[] = [];
    const heicCpu: number[] = [];
    for (let i = 0; i < Math.min(3, singles); i++) {
      const started = performance.now();
      const cpuBefore = decodersCpu();
      await processor.process(heic, 'image/heic', 'fit');
      heicSeconds.push((performance.now() - started) / 1000);
      heicCpu.push(decodersCpu() - cpuBefore);
    }
    goal('engine_heic_12mp_s', heicSeconds, 'report', undefined);
    goal('engine_heic_12mp_cpu_s', heicCpu, 'report: CPU seconds of the decoder and heif-convert', undefined);
  } else {
    log('  HEIC: not measured (libheif tools missing or IMAGE_HEIC off)');
  }

  const bombMs: number[] = [];
  for (let i = 0; i < singles; i++) {
    const started = performance.now();
    const refused = await processor.process(bomb, 'image/png', 'fit').then(
      () => 'accepted',
      (error: { code?: string }) => error.code,
    );
    bombMs.push(performance.now() - started);
    if (refused !== 'IMAGE_TOO_LARGE') throw new Error(`the bomb was ${refused}`);
  }
  goal('engine_bomb_refused_ms', bombMs, '<= 100', (value) => value <= 100);

  const peaks: number[] = [];
  const burstSeconds: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const stop = peakOf(() => treeResidentMb(process.pid) - ownResident());
    const started = performance.now();
    await Promise.all(Array.from({ length: burst }, () => processor.process(photo, 'image/jpeg', 'fit')));
    burstSeconds.push((performance.now() - started) / 1000);
    peaks.push(stop());
  }
  goal('engine_burst_s', burstSeconds, `report: ${burst} photos at once`, undefined);
  goal('engine_decoders_rss_peak_mb', peaks, 'report: the decoder processes together, during the burst', undefined);
  goal('engine_variant_bytes_vs_original', [ratio], 'report: 1280 px WebP over the upload', undefined);
  await processor.close();
}

/** This process's own resident MB (the engine's figure counts its decoder processes alone). */
function ownResident(): number {
  return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024;
}

// ---------------------------------------------------------------- 2. The service
if (parts.includes('service')) await service();
await cleanUp();

async function service(): Promise<void> {
  log('\n2. the service: API and worker processes, uploads through the REST contract');
  let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    embedded = await startEmbeddedPostgres(scratch, { persistent: false, durable: false });
    stopOnExit(() => (embedded as NonNullable<typeof embedded>).stop());
    adminUrl = embedded.url;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  stopOnExit(() => admin.end());
  log(`PostgreSQL: ${(await admin.query<{ version: string }>('select version()')).rows[0]?.version}`);
  const database = `opinion_bench_media_${randomBytes(3).toString('hex')}`;
  await admin.query(`create database ${database}`);
  stopOnExit(() => admin.query(`drop database if exists ${database} with (force)`));
  const ownerUrl = new URL(adminUrl);
  ownerUrl.pathname = `/${database}`;

  const bucket = 'opinion-media-bench';
  const s3Port = await freePort();
  const s3 = keepFolders(
    new S3rver({
      address: '127.0.0.1',
      port: s3Port,
      directory: path.join(scratch, 's3'),
      silent: true,
      configureBuckets: [{ name: bucket }],
    }),
  );
  await s3.run();
  stopOnExit(() => s3.close());

  const apiPort = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: ownerUrl.toString(),
    JWT_SECRET: randomBytes(24).toString('hex'),
    LOG_LEVEL: 'warn',
    DATA_DIR: path.join(scratch, 'data'),
    PORT: String(apiPort),
    S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
    S3_BUCKET: bucket,
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    WRITE_LIMITS: 'uploads=100000/3600',
  };
  function serviceProcess(only: 'api' | 'worker'): ChildProcess {
    const child = spawn(process.execPath, [path.join(root, 'main.ts'), `--only=${only}`], {
      cwd: root,
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    stopOnExit(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    });
    return child;
  }
  const base = `http://127.0.0.1:${apiPort}/api/v1`;
  async function waitFor(condition: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const api = serviceProcess('api');
  await waitFor(async () => (await fetch(`${base}/auth/login-config`).catch(() => undefined))?.ok === true, 'the API');
  const worker = serviceProcess('worker');

  async function call(method: string, pathname: string, token: string | undefined, body?: unknown) {
    const response = await fetch(`${base}${pathname}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: (text ? JSON.parse(text) : {}) as { data?: Record<string, unknown>; error?: { code: string } },
    };
  }
  async function user(n: number): Promise<string> {
    const session = await call('POST', '/auth/anonymous/session', undefined, { deviceId: `media-bench-${process.pid}-${n}` });
    const token = (session.body.data as { accessToken: string }).accessToken;
    const basics = await call('PUT', '/users/me/onboarding/profile-basics', token, {
      fullName: 'Bench Person',
      username: `media_${process.pid % 10_000}_${n}`,
      acceptTerms: true,
    });
    if (basics.status !== 200) throw new Error(`profile basics answered ${basics.status}: ${JSON.stringify(basics.body)}`);
    return token;
  }
  const tokens = await Promise.all([1, 2, 3, 4].map(user));
  const uploader = tokens[0] as string;

  interface Uploaded {
    uploadId: string;
    checksum: string;
  }
  async function put(bytes: Buffer, contentType: string): Promise<Uploaded> {
    const intent = await call('POST', '/uploads/presign', uploader, { purpose: 'post_image', contentType, contentLength: bytes.length });
    if (intent.status !== 200) throw new Error(`presign answered ${intent.status}: ${JSON.stringify(intent.body)}`);
    const { uploadId, uploadUrl, headers } = intent.body.data as { uploadId: string; uploadUrl: string; headers: Record<string, string> };
    const stored = await fetch(uploadUrl, { method: 'PUT', body: new Uint8Array(bytes), headers });
    if (stored.status !== 200) throw new Error(`PUT to the store answered ${stored.status}: ${(await stored.text()).slice(0, 300)}`);
    return { uploadId, checksum: createHash('sha256').update(bytes).digest('hex') };
  }
  /**
   * complete (again after a 503's Retry-After, as an app does), then GET /uploads/{assetId} until
   * the asset is ready: the seconds from the first complete to ready, the final answer, the 503s.
   */
  async function completeUntilReady(
    uploaded: Uploaded,
  ): Promise<{ seconds: number; status: number; data: Record<string, unknown> | undefined; code?: string; unavailable: number }> {
    const started = performance.now();
    let unavailable = 0;
    let complete = await call('POST', '/uploads/complete', uploader, {
      uploadId: uploaded.uploadId,
      purpose: 'post_image',
      checksum: uploaded.checksum,
    });
    while (complete.status === 503 && unavailable < 30) {
      unavailable += 1;
      await new Promise((resolve) => setTimeout(resolve, 1000 * Number(complete.retryAfter ?? 1)));
      complete = await call('POST', '/uploads/complete', uploader, {
        uploadId: uploaded.uploadId,
        purpose: 'post_image',
        checksum: uploaded.checksum,
      });
    }
    let data = complete.body.data;
    if (complete.status !== 201)
      return { seconds: (performance.now() - started) / 1000, status: complete.status, data, code: complete.body.error?.code, unavailable };
    while (data?.status === 'processing') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      data = (await call('GET', `/uploads/${data.assetId as string}`, uploader)).body.data;
    }
    return { seconds: (performance.now() - started) / 1000, status: complete.status, data, unavailable };
  }

  const probe = await completeUntilReady(await put(photo, 'image/jpeg'));
  if (probe.status !== 201 || probe.data?.status === undefined) {
    log(
      `  this service does not process images yet: complete answered ${probe.status} without a status (the REST goals need the processing side of the contract)`,
    );
  } else {
    const readySeconds: number[] = [];
    let ratio = NaN;
    for (let i = 0; i < singles; i++) {
      const result = await completeUntilReady(await put(photo, 'image/jpeg'));
      if (result.data?.status !== 'ready') throw new Error(`the photo ended ${JSON.stringify(result.data?.status ?? result.code)}`);
      readySeconds.push(result.seconds);
      const variants = result.data.variants as { width: number; height: number; contentType: string; url: string }[];
      const webp1280 = variants.find((variant) => variant.contentType === 'image/webp' && Math.max(variant.width, variant.height) === 1280);
      if (webp1280) ratio = (await (await fetch(webp1280.url)).arrayBuffer()).byteLength / photo.length;
    }
    goal('photo_12mp_ready_p50_s', readySeconds, '<= 2', (value) => value <= 2);

    const bombMs: number[] = [];
    for (let i = 0; i < Math.min(5, singles); i++) {
      const uploaded = await put(bomb, 'image/png');
      const result = await completeUntilReady(uploaded);
      if (result.code !== 'IMAGE_TOO_LARGE')
        throw new Error(`the bomb's complete answered ${result.status} ${result.code ?? JSON.stringify(result.data)}`);
      bombMs.push(result.seconds * 1000);
    }
    goal('bomb_refused_ms', bombMs, '<= 100', (value) => value <= 100);
    goal('variant_bytes_vs_original', [ratio], 'report: 1280 px WebP over the upload', undefined);

    const load = fork(path.join(root, 'test', 'bench', 'media-load.ts'), [], { execArgv: [] });
    stopOnExit(async () => load.connected && load.disconnect());
    const runLoad = async (during: () => Promise<void>): Promise<number[]> => {
      const start: MediaLoadStart = { type: 'start', base, tokens, concurrency: loadConcurrency };
      await new Promise<void>((resolve) => {
        load.once('message', () => resolve());
        load.send(start);
      });
      await during();
      const result = await new Promise<MediaLoadResult>((resolve) => {
        load.once('message', (message: MediaLoadResult) => resolve(message));
        load.send({ type: 'stop' });
      });
      if (result.failures.length > 0) throw new Error(`the REST load failed: ${result.failures.slice(0, 3).join('; ')}`);
      return result.latencies;
    };

    const ratios: number[] = [];
    const rssPeaks: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const uploads = await Promise.all(Array.from({ length: burst }, () => put(photo, 'image/jpeg')));
      let busySeconds = 0;
      let peak = 0;
      let unavailable = 0;
      let cpu = '';
      const busy = await runLoad(async () => {
        const stop = peakOf(() => treeResidentMb(worker.pid as number));
        // Where the CPU goes during the burst: the API, the worker process, its decoder processes
        // (at nice 10), this process (the S3 store and the uploads' polling), the REST load.
        const pids = { api: api.pid as number, worker: worker.pid as number, load: load.pid as number };
        const before = {
          api: cpuSeconds(pids.api),
          worker: cpuSeconds(pids.worker),
          decoders: treeCpuSeconds(pids.worker) - cpuSeconds(pids.worker),
          bench: cpuSeconds(process.pid),
          load: cpuSeconds(pids.load),
        };
        const started = performance.now();
        const results = await Promise.all(uploads.map(completeUntilReady));
        busySeconds = (performance.now() - started) / 1000;
        peak = stop();
        const after = {
          api: cpuSeconds(pids.api),
          worker: cpuSeconds(pids.worker),
          decoders: treeCpuSeconds(pids.worker) - cpuSeconds(pids.worker),
          bench: cpuSeconds(process.pid),
          load: cpuSeconds(pids.load),
        };
        cpu = (Object.keys(before) as (keyof typeof before)[]).map((key) => `${key} ${fmt(after[key] - before[key], 1)}`).join(', ');
        unavailable = results.reduce((sum, result) => sum + result.unavailable, 0);
        const notReady = results.filter((result) => result.data?.status !== 'ready');
        const what = (result: (typeof results)[number]) => `${result.status} ${result.code ?? ''} ${JSON.stringify(result.data)}`;
        if (notReady.length > 0)
          throw new Error(`${notReady.length} photos of the burst did not end ready: ${notReady.slice(0, 3).map(what).join('; ')}`);
      });
      const quiet = await runLoad(() => new Promise((resolve) => setTimeout(resolve, busySeconds * 1000)));
      const ratio = percentile(busy, 0.95) / percentile(quiet, 0.95);
      log(
        `  repeat ${r + 1}: ${burst} photos ready in ${fmt(busySeconds, 1)} s; REST p95 ${fmt(percentile(busy, 0.95), 1)} ms (${busy.length} requests) against ${fmt(percentile(quiet, 0.95), 1)} ms quiet (${quiet.length}); worker peak ${fmt(peak, 0)} MB; complete answered 503 ${unavailable} times; CPU s during the burst: ${cpu}`,
      );
      ratios.push(ratio);
      rssPeaks.push(peak);
    }
    goal('rest_p95_during_upload_burst_vs_quiet', ratios, '<= 2', (value) => value <= 2);
    goal('worker_rss_peak_mb', rssPeaks, '<= 600', (value) => value <= 600);
  }
}
