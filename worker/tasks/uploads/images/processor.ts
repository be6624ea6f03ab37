// The image processor: a pool of decoder processes (child.ts) the worker owns, so no pixel of an
// upload is ever decoded in a process that serves HTTP (the one-process `npm start` included).
// Each process decodes one image at a time; there are `concurrency` of them (IMAGE_CONCURRENCY, one
// per core but one by default), in Linux's idle scheduling class (util-linux's chrt; nice 10 where it is
// missing), so they run on CPU time nothing else wants and requests keep the CPU first. Each image
// is bounded in CPU time (IMAGE_TIMEOUT_MS of the process and the libheif tool it runs: a starved
// decoder is not the image's fault) and memory (IMAGE_MEMORY_MB: the resident size of the process and the libheif
// tool it runs, polled; Node's own address-space reservation, over 1 GB at rest, rules out an
// rlimit for the Node process, while the libheif tools get one, see heic.ts): a process past a
// bound, or one that crashes, is killed with its process group, fails that one image with
// IMAGE_UNREADABLE and is replaced; the next image goes on.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Log } from '../../../../logger.ts';
import type { ChildAnswer, ChildJob } from './child.ts';
import { heicSupport } from './heic.ts';
import { ImageRefusal, type ImageShape, type ProcessedImage } from './image.ts';

export { heicSupport } from './heic.ts';
export { ImageRefusal, type ImageShape, type ImageVariant, type ProcessedImage } from './image.ts';

export interface ImageProcessor {
  /** HEIC decodable here: the setting is on and libheif's tools are installed. */
  readonly heic: boolean;
  /**
   * The processed image (upright size, placeholder, variants). Rejects with ImageRefusal for the
   * image's own faults (unreadable, too large, or its decoder crashed, hung or broke the memory
   * bound); with another Error when the processor cannot work (closed, decoder processes fail to start).
   */
  process(bytes: Buffer, contentType: string, shape: ImageShape): Promise<ProcessedImage>;
  /** Stops every decoder process; pending images reject. */
  close(): Promise<void>;
}

export interface ImageProcessorOptions {
  /** Decoder processes, each one image at a time (IMAGE_CONCURRENCY). */
  concurrency: number;
  /** Resident memory of one decoder process (and the libheif tool it runs) past which it is killed (IMAGE_MEMORY_MB). */
  memoryMb: number;
  /** How long one image may take in its decoder process (IMAGE_TIMEOUT_MS). */
  timeoutMs: number;
  /** IMAGE_HEIC: decode HEIC when libheif's tools are installed. */
  heic: boolean;
  log: Log;
}

/** Decoder processes run below the API's priority (Linux nice value, where the idle class cannot be had). */
export const decoderNiceness = 10;
/** util-linux's chrt starts a decoder in SCHED_IDLE: it runs only when no other task wants the CPU. */
const chrt = '/usr/bin/chrt';
/**
 * A decoder that used little CPU for this many times IMAGE_TIMEOUT_MS of wall time was starved or
 * stuck waiting, not decoding: it is replaced and the image is tried again later (a plain Error).
 */
const wallBoundFactor = 4;
/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const ticksPerSecond = 100;
const memoryPollMs = 25;
const childEntry = new URL('./child.ts', import.meta.url);

interface Job {
  id: number;
  bytes: Buffer;
  contentType: string;
  shape: ImageShape;
  resolve(image: ProcessedImage): void;
  reject(error: Error): void;
}

interface Slot {
  child: ChildProcess;
  dir: string;
  ready: boolean;
  job: Job | undefined;
  bounds: NodeJS.Timeout[];
  stderr: string;
}

/** CPU seconds (user and system) of a process and its descendants (Linux /proc; 0 where unreadable). */
function cpuSeconds(pid: number): number {
  let total = 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    total += (Number(fields[11]) + Number(fields[12])) / ticksPerSecond; // utime, stime
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean))
        total += cpuSeconds(Number(child));
    }
  } catch {
    // the process ended meanwhile
  }
  return total;
}

/** Resident kB of a process and its descendants (Linux /proc; 0 where unreadable). */
function residentKb(pid: number): number {
  let total = 0;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    total += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean))
        total += residentKb(Number(child));
    }
  } catch {
    // the process ended meanwhile
  }
  return total;
}

export function startImageProcessor(options: ImageProcessorOptions): ImageProcessor {
  const { concurrency, memoryMb, timeoutMs, log } = options;
  const idleClass = existsSync(chrt);
  const heic = heicSupport(options.heic);
  if (!heic.available) log.warn({ reason: heic.reason }, `HEIC uploads are refused: ${heic.reason}`);
  const slots: Slot[] = [];
  const queue: Job[] = [];
  const exited = new Set<Promise<void>>();
  let nextId = 1;
  let closed = false;

  function kill(slot: Slot): void {
    const pid = slot.child.pid;
    try {
      if (pid !== undefined) process.kill(-pid, 'SIGKILL'); // its process group: a libheif tool it runs goes too
    } catch {
      slot.child.kill('SIGKILL');
    }
  }

  /** Takes a slot out of the pool (killed or ended) and fails its image, if any. */
  function retire(slot: Slot, failure: Error | undefined): void {
    const index = slots.indexOf(slot);
    if (index >= 0) slots.splice(index, 1);
    for (const bound of slot.bounds) clearTimeout(bound);
    slot.bounds = [];
    const job = slot.job;
    slot.job = undefined;
    if (job && failure) job.reject(failure);
  }

  /** A decoder that did not finish in wall time without using its CPU bound: the machine's fault, not the image's. */
  function replaceStarved(slot: Slot): void {
    log.warn(
      { pid: slot.child.pid, contentType: slot.job?.contentType },
      `image decoder process replaced: no answer within ${timeoutMs * wallBoundFactor} ms`,
    );
    retire(
      slot,
      new Error(`the image decoder did not answer within ${timeoutMs * wallBoundFactor} ms (starved of CPU or stuck): tried again later`),
    );
    kill(slot);
    dispatch();
  }

  function breakBound(slot: Slot, what: string): void {
    log.warn({ pid: slot.child.pid, contentType: slot.job?.contentType }, `image decoder process killed: ${what}`);
    retire(slot, new ImageRefusal('IMAGE_UNREADABLE', `the decoder ${what}`));
    kill(slot);
    dispatch();
  }

  function spawn(): Slot {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'opinion-image-'));
    const child = fork(childEntry, [dir, String(memoryMb)], {
      serialization: 'advanced', // Buffers cross as bytes, not JSON
      detached: true, // its own process group, killed whole
      // child.ts collects after each image; chrt execs Node in the idle class (same pid).
      ...(idleClass ? { execPath: chrt, execArgv: ['--idle', '0', process.execPath, '--expose-gc'] } : { execArgv: ['--expose-gc'] }),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      // glibc's per-thread arenas make libvips' freed memory linger as resident; two keep it near use.
      env: { ...process.env, MALLOC_ARENA_MAX: '2' },
    });
    const slot: Slot = { child, dir, ready: false, job: undefined, bounds: [], stderr: '' };
    slots.push(slot);
    try {
      if (child.pid !== undefined && !idleClass) os.setPriority(child.pid, Math.max(decoderNiceness, os.getPriority()));
    } catch (error) {
      log.warn({ err: error }, 'image decoder process: cannot lower its priority');
    }
    child.stderr?.on('data', (chunk: Buffer) => {
      slot.stderr = (slot.stderr + chunk.toString()).slice(-2000);
    });
    child.on('message', (answer: ChildAnswer) => {
      if ('ready' in answer) {
        slot.ready = true;
        child.channel?.unref();
        dispatch();
        return;
      }
      const job = slot.job;
      if (!job || job.id !== answer.id) return;
      for (const bound of slot.bounds) clearTimeout(bound);
      slot.bounds = [];
      slot.job = undefined;
      child.channel?.unref();
      if ('image' in answer) {
        const { image } = answer;
        job.resolve({
          ...image,
          variants: image.variants.map((variant) => ({
            ...variant,
            bytes: Buffer.from(variant.bytes.buffer, variant.bytes.byteOffset, variant.bytes.byteLength),
          })),
        });
      } else if ('refusal' in answer) {
        job.reject(new ImageRefusal(answer.refusal.code, answer.refusal.message));
      } else {
        job.reject(new Error(`image processing failed: ${answer.error}`));
      }
      dispatch();
    });
    const exit = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        rmSync(dir, { recursive: true, force: true });
        resolve();
        if (!slots.includes(slot)) return; // already retired (a bound, close)
        if (!slot.ready) {
          // It never started: the environment is at fault, not an image. Every waiting image fails with a plain Error (retried later).
          log.error({ code, signal, stderr: slot.stderr }, 'image decoder process failed to start');
          retire(slot, undefined);
          for (const job of queue.splice(0))
            job.reject(
              new Error(`image decoder process failed to start (${signal ?? code}): ${slot.stderr.trim().split('\n').pop() ?? ''}`),
            );
          return;
        }
        if (slot.job)
          log.warn(
            { pid: child.pid, code, signal, stderr: slot.stderr, contentType: slot.job.contentType },
            'image decoder process ended mid-image',
          );
        retire(slot, new ImageRefusal('IMAGE_UNREADABLE', `the decoder ended (${signal ?? code})`));
        dispatch();
      });
    });
    exited.add(exit);
    void exit.then(() => exited.delete(exit));
    return slot;
  }

  function start(slot: Slot, job: Job): void {
    slot.job = job;
    slot.child.channel?.ref();
    const pid = slot.child.pid;
    if (pid !== undefined) {
      const cpuAtStart = cpuSeconds(pid);
      slot.bounds.push(
        setInterval(() => {
          const kb = residentKb(pid);
          if (kb > memoryMb * 1024) breakBound(slot, `used ${Math.round(kb / 1024)} MB (over ${memoryMb} MB)`);
          else if ((cpuSeconds(pid) - cpuAtStart) * 1000 > timeoutMs) breakBound(slot, `took over ${timeoutMs} ms of CPU`);
        }, memoryPollMs),
      );
    }
    slot.bounds.push(setTimeout(() => replaceStarved(slot), timeoutMs * wallBoundFactor));
    const message: ChildJob = { id: job.id, bytes: job.bytes, contentType: job.contentType, shape: job.shape };
    slot.child.send(message);
  }

  function dispatch(): void {
    if (closed) return;
    while (queue.length > 0) {
      const idle = slots.find((slot) => slot.ready && slot.job === undefined);
      if (idle) {
        start(idle, queue.shift() as Job);
        continue;
      }
      break;
    }
    // Every slot busy or starting: start more while under the bound; each image waits for the first free one.
    while (slots.length < concurrency && slots.filter((slot) => !slot.ready).length < queue.length) spawn();
  }

  return {
    heic: heic.available,
    process(bytes, contentType, shape) {
      if (closed) return Promise.reject(new Error('image processor closed'));
      // An upload presigned before HEIC was turned off (or before its tools went missing) cannot be decoded here.
      if (contentType === 'image/heic' && !heic.available)
        return Promise.reject(new ImageRefusal('IMAGE_UNREADABLE', `HEIC is not decoded here: ${heic.reason}`));
      return new Promise<ProcessedImage>((resolve, reject) => {
        queue.push({ id: nextId++, bytes, contentType, shape, resolve, reject });
        dispatch();
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error('image processor closed'));
      for (const slot of [...slots]) {
        retire(slot, new Error('image processor closed'));
        kill(slot);
      }
      await Promise.all([...exited]);
    },
  };
}
