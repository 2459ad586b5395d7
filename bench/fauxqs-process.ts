// The destination rounds' SQS (issue 43): fauxqs in a process of its own, as Kafka is in its JVM.
// In the bench's process it shared one event loop with the event publisher, the HTTP receiver and
// the ingest queue's fauxqs, and answered a SendMessage later the busier that loop was: each SQS
// delivery's first attempt (a local activity) held its run longer, the SQS rounds ran slower and
// every steady cost per second was spread over fewer deliveries, charged to SQS.
// `node --import tsx bench/fauxqs-process.ts` prints {"port":N} once listening, stops on SIGTERM.
import { startFauxqs } from 'fauxqs';

const fauxqs = await startFauxqs({ port: 0, logger: false });
process.stdout.write(`${JSON.stringify({ port: fauxqs.port })}\n`);
const stop = (): void => {
  void fauxqs.stop().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
// the bench gone (its pipe closed): do not outlive it
process.stdin.resume();
process.stdin.once('end', stop);
