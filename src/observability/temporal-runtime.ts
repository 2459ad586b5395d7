import { DefaultLogger, makeTelemetryFilterString, Runtime, type LogEntry } from '@temporalio/worker';
import type { Logger } from './logger.js';

let installed = false;

/**
 * Routes the Temporal SDK's logs, and the Rust core's (which otherwise go to the console as
 * coloured text), into our pino logger, without task tokens; and takes signal handling away from
 * the SDK: by default it installs SIGINT/SIGTERM handlers that re-raise the signal once workers
 * stopped, which would kill the process before the rest of our shutdown ran. Call once, before
 * the first NativeConnection.
 */
export function installTemporalRuntime(logger: Logger, level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' = 'WARN'): void {
  if (installed) return;
  installed = true;
  const child = logger.child({ component: 'temporal' });
  const log = (entry: LogEntry): void => {
    // a task token is a long opaque credential-like blob: workflowId, activityId and attempt
    // already say which task it was
    const { taskToken: _taskToken, ...meta } = entry.meta ?? {};
    switch (entry.level) {
      case 'ERROR':
        child.error(meta, entry.message);
        break;
      case 'WARN':
        child.warn(meta, entry.message);
        break;
      case 'INFO':
        child.info(meta, entry.message);
        break;
      default:
        child.debug(meta, entry.message);
    }
  };
  Runtime.install({
    logger: new DefaultLogger(level, log),
    shutdownSignals: [],
    // the Rust core prints to the console (plain text, ANSI colours) unless told to forward its
    // logs to the logger above
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: level }), forward: {} } },
  });
}
