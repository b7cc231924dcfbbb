// The operator replicas of the soak, each in a slot that a supervisor keeps filled the way a Deployment
// would: a replica the soak kills is restarted by the soak when it chooses; one that exits on its own (it
// lost the lease, or crashed) is recorded and restarted after a second. Each process's RSS is sampled from
// /proc for the memory check, and its log is written to the work directory when it ends.
import { startOperator, type OperatorProcess } from '@syncline/test-support';
import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const ExitKind = {
  /** SIGKILLed by the soak. */
  killed: 'killed',
  /** Exited by itself after losing the lease (by design: it restarts as a follower). */
  lostLeadership: 'lostLeadership',
  /** Exited by itself for any other reason: a failure of the soak. */
  crashed: 'crashed',
  /** SIGTERMed at the end. */
  stopped: 'stopped',
} as const;
export type ExitKind = (typeof ExitKind)[keyof typeof ExitKind];

export type Incarnation = {
  readonly slot: string;
  readonly pid: number;
  readonly startedAt: number;
  endedAt?: number;
  end?: ExitKind;
  exitCode?: number | null;
  /** [ms since epoch, bytes, whether it was the leader then] */
  readonly rss: Array<[number, number, boolean]>;
  /** The last error-level log lines, for a report. */
  lastErrors?: string[];
};

type Slot = {
  readonly name: string;
  process: OperatorProcess | undefined;
  incarnation: Incarnation | undefined;
  /** Set while a start is under way, so the supervisor and the soak never start two processes in one slot. */
  starting: Promise<void> | undefined;
  /** What the process's syncline_leader gauge said at the last scrape. */
  leading: boolean;
  planned: boolean;
  cacheDir: string;
};

export class ReplicaSet {
  readonly incarnations: Incarnation[] = [];
  readonly #slots: Slot[];
  readonly #kubeconfig: string;
  readonly #args: readonly string[];
  readonly #workDir: string;
  readonly #log: (line: string) => void;
  #stopping = false;

  constructor(options: { slots: readonly string[]; kubeconfig: string; args: readonly string[]; workDir: string; log: (line: string) => void }) {
    this.#slots = options.slots.map((name) => ({
      name,
      process: undefined,
      incarnation: undefined,
      starting: undefined,
      leading: false,
      planned: false,
      cacheDir: join(options.workDir, `cache-${name}`),
    }));
    this.#kubeconfig = options.kubeconfig;
    this.#args = options.args;
    this.#workDir = options.workDir;
    this.#log = options.log;
    // A soak that dies must not leave operators behind.
    process.once('exit', () => {
      for (const slot of this.#slots) if (slot.process !== undefined) process.kill(slot.process.pid, 'SIGKILL');
    });
  }

  get slotNames(): string[] {
    return this.#slots.map((s) => s.name);
  }

  /** Webhook receivers (HOST:PORT) of the replicas running now. */
  receivers(): string[] {
    return this.#slots.flatMap((s) => (s.process?.webhookAddress === undefined ? [] : [s.process.webhookAddress]));
  }

  running(): Array<{ slot: string; process: OperatorProcess }> {
    return this.#slots.flatMap((s) => (s.process === undefined ? [] : [{ slot: s.name, process: s.process }]));
  }

  /** The slot whose running process holds this Lease identity (the operator's is `<hostname>-<pid>`). */
  slotOf(holderIdentity: string | undefined): string | undefined {
    return this.#slots.find((s) => s.process !== undefined && holderIdentity === `${hostname()}-${s.process.pid}`)?.name;
  }

  identityOf(slot: string): string | undefined {
    const operator = this.#slot(slot).process;
    return operator === undefined ? undefined : `${hostname()}-${operator.pid}`;
  }

  /** Starts an operator process in the slot, retrying when it dies before it started (the API server may be cut). */
  start(slotName: string): Promise<void> {
    const slot = this.#slot(slotName);
    if (slot.process !== undefined || this.#stopping) return Promise.resolve();
    slot.starting ??= this.#startIn(slot).finally(() => (slot.starting = undefined));
    return slot.starting;
  }

  async #startIn(slot: Slot): Promise<void> {
    const slotName = slot.name;
    for (let attempt = 1; ; attempt++) {
      try {
        const operator = await startOperator({ kubeconfig: this.#kubeconfig, args: this.#args, cacheDir: slot.cacheDir });
        const incarnation: Incarnation = { slot: slotName, pid: operator.pid, startedAt: Date.now(), rss: [] };
        slot.process = operator;
        slot.incarnation = incarnation;
        this.incarnations.push(incarnation);
        void operator.exited.then((code) => this.#onExit(slot, operator, incarnation, code));
        return;
      } catch (error) {
        if (attempt >= 5) throw error;
        this.#log(`replica ${slotName} failed to start (attempt ${attempt}): ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`);
        await sleep(1_000);
      }
    }
  }

  /** SIGKILL: a crash, as far as the process can tell. The slot stays empty until start(). */
  async kill(slotName: string): Promise<void> {
    const slot = this.#slot(slotName);
    const operator = slot.process;
    if (operator === undefined) return;
    slot.planned = true;
    await operator.kill();
    // #onExit runs from the same `exited` promise; let it finish before the caller restarts the slot.
    while (slot.process === operator) await sleep(10);
  }

  async sampleRss(): Promise<void> {
    const now = Date.now();
    await Promise.all(
      this.#slots.map(async (slot) => {
        const { process: operator, incarnation } = slot;
        if (operator === undefined || incarnation === undefined) return;
        const status = await readFile(`/proc/${operator.pid}/status`, 'utf8').catch(() => '');
        const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
        if (kb !== undefined) incarnation.rss.push([now, Number(kb) * 1024, slot.leading]);
      }),
    );
  }

  /** Reads every running replica's syncline_leader gauge; returns how many say they lead. */
  async scrapeLeaders(): Promise<number> {
    const leading = await Promise.all(
      this.#slots.map(async (slot) => {
        const operator = slot.process;
        if (operator === undefined) return (slot.leading = false);
        try {
          const response = await fetch(`http://${operator.probeAddress}/metrics`, { signal: AbortSignal.timeout(2_000) });
          const leads = /^syncline_leader 1$/m.test(await response.text());
          if (slot.process === operator) slot.leading = leads;
          return leads;
        } catch {
          return false;
        }
      }),
    );
    return leading.filter(Boolean).length;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#slots.map((slot) => (slot.starting ?? Promise.resolve()).catch(() => undefined)));
    await Promise.all(
      this.#slots.map(async (slot) => {
        const operator = slot.process;
        if (operator === undefined) return;
        slot.planned = true;
        await operator.stop();
        while (slot.process === operator) await sleep(10);
      }),
    );
  }

  async #onExit(slot: Slot, operator: OperatorProcess, incarnation: Incarnation, code: number | null): Promise<void> {
    incarnation.endedAt = Date.now();
    incarnation.exitCode = code;
    const planned = slot.planned;
    slot.planned = false;
    if (planned) incarnation.end = this.#stopping ? 'stopped' : 'killed';
    else incarnation.end = operator.logs.some((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('lost leadership')) ? 'lostLeadership' : 'crashed';
    incarnation.lastErrors = operator.logs
      .filter((l) => l['level'] === 'error' || l['level'] === 'fatal')
      .slice(-5)
      .map((l) => JSON.stringify(l).slice(0, 500));
    slot.process = undefined;
    slot.incarnation = undefined;
    slot.leading = false;
    const logPath = join(this.#workDir, `operator-${slot.name}-${incarnation.pid}.log`);
    await writeFile(logPath, operator.logs.map((l) => JSON.stringify(l)).join('\n') + '\n').catch(() => undefined);
    if (planned) return;
    const leaderLines = operator.logs
      .filter((l) => /leader|lease/i.test(String(l['msg'])))
      .slice(-4)
      .map((l) => `${String(l['time']).slice(11, 23)} ${String(l['msg'])}${l['err'] === undefined ? '' : ` (${JSON.stringify(l['err']).slice(0, 120)})`}`);
    this.#log(
      `replica ${slot.name} (pid ${incarnation.pid}) exited by itself with code ${String(code)} (${incarnation.end}); log ${logPath}; restarting it. Its last leader-election lines: ${leaderLines.join(' | ') || 'none'}`,
    );
    await sleep(1_000);
    await this.start(slot.name).catch((error: unknown) =>
      this.#log(`replica ${slot.name} could not be restarted: ${error instanceof Error ? error.message : String(error)}`),
    );
  }

  #slot(name: string): Slot {
    const slot = this.#slots.find((s) => s.name === name);
    if (slot === undefined) throw new Error(`no replica slot ${name}`);
    return slot;
  }
}
