// A process that logs through the operator's logger to its standard output, as the operator does: started by
// log-writer.test.ts as `node log-child.ts SCENARIO COUNT`.
// - turns: COUNT lines, one per turn of the event loop, then the process ends by itself;
// - exit: COUNT lines in one turn, then process.exit(3) at once;
// - crash: COUNT lines in one turn, then an uncaught exception;
// - stall: COUNT lines of ~200 bytes while nobody reads standard output, then `{"stalled":N}` on standard error;
//   on a line on standard input, half a second later (the reader has taken the backlog), 20 lines more ('after'),
//   then exit.
import { LogFormat, createLogger } from '../logging.ts';

const [scenario = 'turns', countText = '1000'] = process.argv.slice(2);
const count = Number(countText);
const logger = createLogger({ level: 'info', format: LogFormat.json, base: { pid: process.pid } });
const filler = 'x'.repeat(120);

function logInOneTurn(): void {
  for (let n = 0; n < count; n++) logger.info({ n, filler }, 'line');
}

switch (scenario) {
  case 'turns': {
    let n = 0;
    const next = (): void => {
      logger.info({ n }, 'line');
      if (++n < count) setImmediate(next);
    };
    next();
    break;
  }
  case 'exit':
    logInOneTurn();
    process.exit(3);
    break;
  case 'crash':
    logInOneTurn();
    setImmediate(() => {
      throw new Error('the crash the test asked for');
    });
    break;
  case 'stall': {
    // In bursts over many turns, as reconciles log: every call returns while the pipe is full.
    let n = 0;
    const burst = (): void => {
      for (let i = 0; i < 100 && n < count; i++, n++) logger.info({ n, filler }, 'line');
      if (n < count) setImmediate(burst);
      else process.stderr.write(`${JSON.stringify({ stalled: n })}\n`);
    };
    burst();
    process.stdin.once('data', () => {
      let after = 0;
      setTimeout(() => {
        const timer = setInterval(() => {
          logger.info({ after }, 'after');
          if (++after === 20) {
            clearInterval(timer);
            process.stdin.destroy();
          }
        }, 5);
      }, 500);
    });
    break;
  }
  default:
    throw new Error(`unknown scenario ${scenario}`);
}
