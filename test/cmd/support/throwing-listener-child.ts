// A process under runService with a second 'unhandledRejection' listener that throws, as the
// Temporal SDK's does in a worker that runs its workflows on the main thread: an unhandled
// rejection must still stop the process's parts before it exits 1. argv: <management port>.
import { Registry } from 'prom-client';
import { runService } from '../../../src/processes/lifecycle.js';
import { createLogger } from '../../../src/observability/logger.js';

await runService({
  name: 'child',
  logger: createLogger({ level: 'info', name: 'child' }),
  managementPort: Number(process.argv[2]),
  managementHost: '127.0.0.1',
  registry: new Registry(),
  checks: {},
  start: () =>
    Promise.resolve([
      {
        stop: () => {
          process.stdout.write('part stopped\n');
          return Promise.resolve();
        },
      },
    ]),
});
process.on('unhandledRejection', (err) => {
  throw new Error(`An Unhandled Promise rejection could not be associated to a Workflow Run: ${String(err)}`);
});
setTimeout(() => void Promise.reject(new Error('boom')), 50);
