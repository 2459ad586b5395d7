import type { Registry } from 'prom-client';
import type { Logger } from '../observability/logger.js';
import { routeProcessWarnings } from '../observability/logger.js';
import { startManagementServer, type ReadinessCheck } from '../observability/management-server.js';
import type { RunningProcess } from './running-process.js';
import { startFailure } from './start-failure.js';

export interface ServiceRun {
  /** resolves once the service stopped (signal or fatal error) */
  done: Promise<void>;
  /** begin the graceful shutdown programmatically */
  shutdown(reason: string): Promise<void>;
}

/**
 * The life of one long-running process: management endpoints first (so probes answer while it
 * starts; /readyz 503 until the parts run), then the parts, then SIGINT/SIGTERM -> readyz 503
 * -> parts stopped in reverse order -> cleanup, all bounded by shutdownTimeoutMs, after which the process exits anyway.
 */
export async function runService(opts: {
  name: string;
  logger: Logger;
  managementPort: number;
  /** default all interfaces (probes come from the kubelet); dev mode keeps it on loopback */
  managementHost?: string;
  registry: Registry;
  checks: Record<string, ReadinessCheck>;
  start: () => Promise<RunningProcess[]>;
  /** released after the parts stopped: connections, embedded servers */
  cleanup?: () => Promise<void>;
  shutdownTimeoutMs?: number;
  exitOnStop?: boolean;
}): Promise<ServiceRun> {
  const { logger } = opts;
  routeProcessWarnings(logger);
  const management = await startManagementServer({
    port: opts.managementPort,
    ...(opts.managementHost ? { host: opts.managementHost } : {}),
    registry: opts.registry,
    checks: opts.checks,
  });
  let parts: RunningProcess[] = [];
  let stopping: Promise<void> | undefined;
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((r) => (resolveDone = r));

  const shutdown = (reason: string, exitCode = 0): Promise<void> => {
    stopping ??= (async () => {
      logger.info({ reason }, `${opts.name}: shutting down`);
      management.setShuttingDown();
      const timeoutMs = opts.shutdownTimeoutMs ?? 30_000;
      const force = setTimeout(() => {
        logger.error(`${opts.name}: shutdown took longer than ${timeoutMs} ms, exiting`);
        process.exit(1);
      }, timeoutMs);
      force.unref();
      for (const part of [...parts].reverse()) {
        await part.stop().catch((err: unknown) => logger.error({ err }, 'error while stopping'));
      }
      await opts.cleanup?.().catch((err: unknown) => logger.error({ err }, 'error during cleanup'));
      await management.close();
      clearTimeout(force);
      logger.info(`${opts.name}: stopped`);
      resolveDone();
      if (opts.exitOnStop ?? true) process.exit(exitCode);
    })();
    return stopping;
  };

  // `on`, not `once`: a second Ctrl-C must not fall through to the default handler mid-shutdown
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('unhandledRejection', (err) => {
    logger.error({ err }, 'unhandled rejection');
    void shutdown('unhandledRejection', 1);
  });
  // A throw nothing caught ends the process the same way: logged, then the bounded shutdown, exit 1.
  // The worker runs its workflows on the main thread (processes/workflow-sandbox.ts), where the
  // Temporal SDK adds an 'unhandledRejection' listener of its own that throws for any rejection not
  // made by workflow code: such a throw comes here, and the worker still drains.
  process.on('uncaughtException', (err) => {
    logger.error({ err }, 'uncaught exception');
    void shutdown('uncaughtException', 1);
  });

  try {
    parts = await opts.start();
    // only now: /readyz said 503 "starting" while the public port did not listen yet
    if (!stopping) management.setStarted();
  } catch (err) {
    const failure = startFailure(err);
    // not under `err`: pino's error serializer would take the plain object for an Error and add its raw cause
    logger.error({ error: failure.err }, `${opts.name}: failed to start: ${failure.cause}`);
    await shutdown('start failed', 1);
  }
  logger.info({ managementPort: management.port }, `${opts.name}: started; /metrics, /healthz, /readyz on port ${management.port}`);
  return { done, shutdown: (reason) => shutdown(reason) };
}
